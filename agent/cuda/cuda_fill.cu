// Fills device buffers with the same deterministic values as
// tc_random_value() in device.h, so inputs are random but reproducible.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

static __device__ float s_random(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
}

template <typename T> static __device__ T s_convert(float v);
template <> __device__ float s_convert<float>(float v) { return v; }
template <> __device__ __half s_convert<__half>(float v) { return __float2half(v); }
template <> __device__ __nv_bfloat16 s_convert<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

template <typename T> static __global__ void s_fill(T *data, size_t count, uint64_t seed)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        data[i] = s_convert<T>(s_random(seed, i));
}

extern "C" cudaError_t tc_cuda_fill(void *data, size_t count, int kind, uint64_t seed,
                                    cudaStream_t stream)
{
    if (count == 0)
        return cudaSuccess;
    const unsigned threads = 256;
    size_t want = (count + threads - 1) / threads;
    unsigned blocks = want > 4096 ? 4096u : (unsigned)want;
    switch (kind) {
    case 1:
        s_fill<__half><<<blocks, threads, 0, stream>>>((__half *)data, count, seed);
        break;
    case 2:
        s_fill<__nv_bfloat16><<<blocks, threads, 0, stream>>>((__nv_bfloat16 *)data, count, seed);
        break;
    default:
        s_fill<float><<<blocks, threads, 0, stream>>>((float *)data, count, seed);
        break;
    }
    return cudaGetLastError();
}
