// The backend's own kernels: reproducible input data (the same values as
// tc_random_value() in device.h), the spin that keeps the GPU busy while
// the host enqueues a timed call, the bias add and bias-gradient
// reduction PyTorch runs around a cuDNN convolution, and the copy of a
// bias into the rows of a result that addmm runs before cuBLAS.
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

static __device__ float s_to_float(float v) { return v; }
static __device__ float s_to_float(__half v) { return __half2float(v); }
static __device__ float s_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> static __global__ void s_fill(T *data, size_t count, uint64_t seed)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        data[i] = s_convert<T>(s_random(seed, i));
}

static unsigned s_blocks(size_t count, unsigned threads, unsigned cap)
{
    size_t want = (count + threads - 1) / threads;
    return want > cap ? cap : (unsigned)(want ? want : 1);
}

extern "C" cudaError_t tc_cuda_fill(void *data, size_t count, int kind, uint64_t seed,
                                    cudaStream_t stream)
{
    if (count == 0)
        return cudaSuccess;
    const unsigned threads = 256;
    unsigned blocks = s_blocks(count, threads, 4096);
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

static __global__ void s_spin(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

extern "C" cudaError_t tc_cuda_spin(long long cycles, cudaStream_t stream)
{
    s_spin<<<1, 1, 0, stream>>>(cycles);
    return cudaGetLastError();
}

/* y[i] += b[channel(i)], in fp32 as PyTorch's add_ computes (opmath). */
template <typename T>
static __global__ void s_bias_add(T *y, const T *b, size_t count, size_t k, size_t pq, int nhwc)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        size_t c = nhwc ? i % k : i / pq % k;
        y[i] = s_convert<T>(s_to_float(y[i]) + s_to_float(b[c]));
    }
}

extern "C" cudaError_t tc_cuda_bias_add(void *y, const void *bias, size_t n, size_t k, size_t pq,
                                        int nhwc, int kind, cudaStream_t stream)
{
    size_t count = n * k * pq;
    if (count == 0)
        return cudaSuccess;
    const unsigned threads = 256;
    unsigned blocks = s_blocks(count, threads, 65535);
    switch (kind) {
    case 1:
        s_bias_add<__half><<<blocks, threads, 0, stream>>>((__half *)y, (const __half *)bias,
                                                           count, k, pq, nhwc);
        break;
    case 2:
        s_bias_add<__nv_bfloat16><<<blocks, threads, 0, stream>>>(
            (__nv_bfloat16 *)y, (const __nv_bfloat16 *)bias, count, k, pq, nhwc);
        break;
    default:
        s_bias_add<float><<<blocks, threads, 0, stream>>>((float *)y, (const float *)bias, count,
                                                          k, pq, nhwc);
        break;
    }
    return cudaGetLastError();
}

/* Block (x, c): a strided share of channel c's n * pq values, reduced in
 * the block and added into acc[c]. */
template <typename T>
static __global__ void s_bias_grad(const T *dy, float *acc, size_t n, size_t k, size_t pq,
                                   int nhwc)
{
    __shared__ float part[256];
    size_t c = blockIdx.y;
    size_t per = n * pq;
    float sum = 0;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < per;
         e += (size_t)blockDim.x * gridDim.x) {
        size_t t = e / pq, j = e % pq;
        size_t i = nhwc ? (t * pq + j) * k + c : (t * k + c) * pq + j;
        sum += s_to_float(dy[i]);
    }
    part[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(&acc[c], part[0]);
}

template <typename T> static __global__ void s_store(T *db, const float *acc, size_t k)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < k)
        db[i] = s_convert<T>(acc[i]);
}

extern "C" cudaError_t tc_cuda_bias_grad(const void *dy, void *db, float *acc, size_t n,
                                         size_t k, size_t pq, int nhwc, int kind,
                                         cudaStream_t stream)
{
    if (k == 0)
        return cudaSuccess;
    cudaError_t e = cudaMemsetAsync(acc, 0, k * sizeof *acc, stream);
    if (e != cudaSuccess)
        return e;
    const unsigned threads = 256;
    /* Enough blocks per channel to fill the GPU, each with a few values
     * per thread. */
    unsigned chunks = s_blocks(n * pq, threads * 8, 256);
    dim3 grid(chunks, (unsigned)k);
    unsigned out_blocks = s_blocks(k, threads, 65535);
    switch (kind) {
    case 1:
        s_bias_grad<__half><<<grid, threads, 0, stream>>>((const __half *)dy, acc, n, k, pq, nhwc);
        s_store<__half><<<out_blocks, threads, 0, stream>>>((__half *)db, acc, k);
        break;
    case 2:
        s_bias_grad<__nv_bfloat16><<<grid, threads, 0, stream>>>((const __nv_bfloat16 *)dy, acc,
                                                                 n, k, pq, nhwc);
        s_store<__nv_bfloat16><<<out_blocks, threads, 0, stream>>>((__nv_bfloat16 *)db, acc, k);
        break;
    default:
        s_bias_grad<float><<<grid, threads, 0, stream>>>((const float *)dy, acc, n, k, pq, nhwc);
        s_store<float><<<out_blocks, threads, 0, stream>>>((float *)db, acc, k);
        break;
    }
    return cudaGetLastError();
}

/* c[i] = bias[i % cols]: copy_ of the bias expanded to [rows, cols]. */
template <typename T>
static __global__ void s_bias_rows(T *c, const T *bias, size_t count, size_t cols)
{
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        c[i] = bias[i % cols];
}

extern "C" cudaError_t tc_cuda_bias_rows(void *c, const void *bias, size_t rows, size_t cols,
                                         int kind, cudaStream_t stream)
{
    size_t count = rows * cols;
    if (count == 0)
        return cudaSuccess;
    const unsigned threads = 256;
    unsigned blocks = s_blocks(count, threads, 65535);
    switch (kind) {
    case 1:
        s_bias_rows<__half><<<blocks, threads, 0, stream>>>((__half *)c, (const __half *)bias,
                                                            count, cols);
        break;
    case 2:
        s_bias_rows<__nv_bfloat16><<<blocks, threads, 0, stream>>>(
            (__nv_bfloat16 *)c, (const __nv_bfloat16 *)bias, count, cols);
        break;
    default:
        s_bias_rows<float><<<blocks, threads, 0, stream>>>((float *)c, (const float *)bias, count,
                                                           cols);
        break;
    }
    return cudaGetLastError();
}
