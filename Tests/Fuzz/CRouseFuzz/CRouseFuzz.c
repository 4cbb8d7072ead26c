// Only the declaration in include/CRouseFuzz.h: libFuzzer's runtime defines the function.
#include "CRouseFuzz.h"
