#include "CLibFuzzer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// Both are libFuzzer's interface: the first is the harness's (its @_cdecl), the
// second libFuzzer's (LLVM 12 and later), which runs it as libFuzzer's own main does.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

void alertd_fuzz_main(int argc, char **argv) {
    exit(LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput));
}
