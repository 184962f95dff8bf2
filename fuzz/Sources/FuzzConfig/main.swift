// The entry point of the debug build `make fuzz-ci` makes (Package.swift, ALERTD_FUZZ=ci):
// libFuzzer takes over. The release build of fuzz/run.sh leaves this file out.
import CLibFuzzer

alertd_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv)
