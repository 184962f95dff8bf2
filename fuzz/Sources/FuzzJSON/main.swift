// SwiftPM gives a debug executable an entry point of its own, in place of
// libFuzzer's `main`; this one hands the process over to libFuzzer.
import CLibFuzzer

alertd_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv)
