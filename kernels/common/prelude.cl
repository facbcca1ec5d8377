/* Kernelport's OpenCL C prelude: the core puts it before every program it builds (a plugin's or a
 * kernel registered at run time), so kernels share one tensor view type, its index helpers and
 * the horizontal sums. Names start with kp_ / KP_; the prelude only ever grows. */

/*
 * A tensor reaches a kernel as two parameters, its buffer and its view:
 *     __kernel void f(__global const float *x, const kp_view2 xv, ...)
 * set by the plugin with host->arg_tensor(l, k, index, &tensor, 2) (plugin.h). Offset, extents and
 * strides count elements; a tensor of lower rank than the view has leading extents 1 and strides
 * 0, so a broadcast operand needs no special case.
 */
typedef struct kp_view0 {
    int offset;
} kp_view0;

#define KP_VIEW_TYPE(R)                                                                            \
    typedef struct kp_view##R {                                                                    \
        int offset;                                                                                \
        int shape[R];                                                                              \
        int strides[R];                                                                            \
    } kp_view##R

KP_VIEW_TYPE(1);
KP_VIEW_TYPE(2);
KP_VIEW_TYPE(3);
KP_VIEW_TYPE(4);
KP_VIEW_TYPE(5);
KP_VIEW_TYPE(6);
KP_VIEW_TYPE(7);
KP_VIEW_TYPE(8);
#undef KP_VIEW_TYPE

/* Element index of (i), (i, j), ... in a view: the offset plus each index times its stride. */
#define kp_at1(v, i) ((v).offset + (i) * (v).strides[0])
#define kp_at2(v, i, j) ((v).offset + (i) * (v).strides[0] + (j) * (v).strides[1])
#define kp_at3(v, i, j, k)                                                                         \
    ((v).offset + (i) * (v).strides[0] + (j) * (v).strides[1] + (k) * (v).strides[2])
#define kp_at4(v, i, j, k, l)                                                                      \
    ((v).offset + (i) * (v).strides[0] + (j) * (v).strides[1] + (k) * (v).strides[2] +             \
     (l) * (v).strides[3])

/* Horizontal sums in one fixed order: halves added lane-wise, then pairs, so results do not
 * depend on the vector width a device's tuning picks beyond that order. */
static inline float kp_hsum2(float2 q)
{
    return q.x + q.y;
}

static inline float kp_hsum4(float4 q)
{
    return (q.x + q.y) + (q.z + q.w);
}

static inline float kp_hsum8(float8 q)
{
    return kp_hsum4(q.lo + q.hi);
}

static inline float kp_hsum16(float16 q)
{
    return kp_hsum8(q.lo + q.hi);
}
