/*
 * Fake GPU device for ggufmap-oracle (see fake_gpu.c and README.md).
 */
#ifndef GGUFMAP_ORACLE_FAKE_GPU_H
#define GGUFMAP_ORACLE_FAKE_GPU_H

#include <stdbool.h>
#include <stddef.h>

enum fake_gpu_kind {
    FAKE_GPU_NONE = 0,
    FAKE_GPU_METAL, /* device MTL0: buffer_from_host_ptr -> MTL0_Mapped, no host buft */
    FAKE_GPU_CUDA,  /* device CUDA0: allocated CUDA0 buffers, host buft CUDA_Host */
};

#define FAKE_GPU_MAX_DEVICES 8

/* Register the fake devices' backend registry (n_devices GPUs of the kind:
 * MTL0..MTLn-1 or CUDA0..CUDAn-1) with ggml_backend_register().
 * Call after the CPU backend is loaded and before the model loads.
 * Returns false (with a message on stderr) if registration did not take. */
bool fake_gpu_register(enum fake_gpu_kind kind, int n_devices);

/* What device i (0-based) reports as free memory (llama.cpp's default
 * layer split weighs GPUs by it); unset: 1 TiB, like its total.  Call
 * before the model loads. */
void fake_gpu_set_free(int device, size_t free_bytes);

#endif
