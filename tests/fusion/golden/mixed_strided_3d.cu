
// v0: int32 = input0
// v1: float16 = input1
// v2: float16 = mul(v0, v1) as (float16,float16)
// v3: float16 = relu(v2) as (float16)
// v4: float32 = const -1.0
// v5: float32 = const 1.0
// v6: float16 = clamp(v3, v4, v5) as (float16,float16,float16)
// return v6
// plan: ('strided', 1, 'int', 3, ('s', 'c', 'c'))
extern "C" __global__ void gt_fused_bb87ee80190d9633(
    const int* __restrict__ in0,
    const gt_half* __restrict__ in1,
    gt_half* __restrict__ out0,
    int n,
    int size0,
    int size1,
    int size2,
    int st_in0_0,
    int st_in0_1,
    int st_in0_2) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  for (int i = tid; i < n; i += stride) {
    int rem = i;
    int o_in0 = 0;
    { const int c = rem % size2; rem /= size2;
      o_in0 += c * st_in0_2;
    }
    { const int c = rem % size1; rem /= size1;
      o_in0 += c * st_in0_1;
    }
    { const int c = rem;
      o_in0 += c * st_in0_0;
    }
    const int t0 = in0[o_in0];
    const float t1 = gt_to_float(in1[i]);
    const float t2 = (((float)(t0)) * t1);
    const float t3 = gt_relu(t2);
    const double t4 = -1.0;
    const double t5 = 1.0;
    const float t6 = gt_clamp(t3, ((float)(t4)), ((float)(t5)));
    out0[i] = gt_from_float<gt_half>(t6);
  }
}
