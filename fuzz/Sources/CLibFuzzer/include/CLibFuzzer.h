// libFuzzer's driver, for the harnesses' entry points (Package.swift, ALERTD_FUZZ).
#ifndef ALERTD_CLIBFUZZER_H
#define ALERTD_CLIBFUZZER_H

/// Runs libFuzzer with the process's arguments on the harness's
/// LLVMFuzzerTestOneInput, then exits with libFuzzer's status.
_Noreturn void alertd_fuzz_main(int argc, char **argv);

#endif
