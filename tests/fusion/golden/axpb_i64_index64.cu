
// v0: int64 = scalar0
// v1: int64 = input0
// v2: int64 = mul(v0, v1) as (int64,int64)
// v3: int64 = scalar1
// v4: int64 = add(v2, v3) as (int64,int64)
// return v4
// plan: ('strided', 1, 'long long', 1, ('c', 'c'))
extern "C" __global__ void gt_fused_82bef42df0d5d248(
    const long long* __restrict__ in0,
    long long* __restrict__ out0,
    long long s0,
    long long s1,
    long long n,
    long long size0) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)blockDim.x * gridDim.x;
  for (long long i = tid; i < n; i += stride) {
    const long long t0 = s0;
    const long long t1 = in0[i];
    const long long t2 = (t0 * t1);
    const long long t3 = s1;
    const long long t4 = (t2 + t3);
    out0[i] = t4;
  }
}
