// stencil.h: helpers shared by the stencil examples.
//
// Arrays are row-major and flat: A(i,j,k) = a[i + nx*j + nx*ny*k], with i the
// unit-stride dimension (the one mapped to lanes or threads).

#ifndef STENCIL_H
#define STENCIL_H

// Largest block edge the shared-memory kernels are written for.
#define TILE 16

// Flat index of (i, j) in an nx-wide 2-D array.
static inline int idx2(int i, int j, uniform int nx) {
    return i + nx * j;
}

// Flat index of (i, j, k) in an nx-by-ny-by-nz 3-D array.
static inline int idx3(int i, int j, int k, uniform int nx, uniform int ny) {
    return i + nx * (j + ny * k);
}

#endif
