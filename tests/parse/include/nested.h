// Included by preprocess_include.spmd; includes parse_header.h again, which
// the guard and #pragma once make harmless.
#include "parse_header.h"
#define NESTED_VALUE (HEADER_SCALE * 2)
