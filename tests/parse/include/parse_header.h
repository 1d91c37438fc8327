// A header for preprocess_include.spmd: a guard, a macro, a struct and an inline function.
#pragma once
#ifndef PARSE_HEADER_H
#define PARSE_HEADER_H

#define HEADER_SCALE 3

struct HeaderPair {
    int a;
    int b;
};

static inline int header_sum(HeaderPair p) {
    return p.a + p.b;
}

#endif
