// libFuzzer's entry for programs that keep their own main (compiler-rt's FuzzerInterface.h): runs the fuzzer
// with the command line `argc`/`argv` (libFuzzer flags and corpus directories), calling `callback` per input.
#ifndef C_ROUSE_FUZZ_H
#define C_ROUSE_FUZZ_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
