// libFuzzer's driver, for the harnesses' debug builds (ALERTD_FUZZ=ci in Package.swift).
#ifndef ALERTD_CLIBFUZZER_H
#define ALERTD_CLIBFUZZER_H

/// Runs libFuzzer with the process's arguments on the harness's
/// LLVMFuzzerTestOneInput, then exits with libFuzzer's status.
_Noreturn void alertd_fuzz_main(int argc, char **argv);

#endif
