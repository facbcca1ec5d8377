/* SPDX-License-Identifier: Apache-2.0 */
/* CLBlast statuses as kp_status, with CLBlast's name (and the OpenCL error it mirrors). */
#include "blas.h"

typedef struct status_row {
    int code;
    const char *name; /* CLBlast's enumerator */
    const char *cl;   /* the OpenCL error it mirrors, or NULL */
    kp_status kp;
} status_row;

#define ROW(code, name, cl, kp)                                                                    \
    {                                                                                              \
        code, #name, cl, KP_##kp                                                                   \
    }
static const status_row statuses[] = {
    ROW(-3, CLBlastOpenCLCompilerNotAvailable, "CL_COMPILER_NOT_AVAILABLE", ERR_BUILD),
    ROW(-4, CLBlastTempBufferAllocFailure, "CL_MEM_OBJECT_ALLOCATION_FAILURE", ERR_OUT_OF_MEMORY),
    /* As the core maps CL_OUT_OF_RESOURCES (backends/opencl/cl-errors.c): the same shortage gives
     * the same status whether Kernelport or CLBlast made the call. */
    ROW(-5, CLBlastOpenCLOutOfResources, "CL_OUT_OF_RESOURCES", ERR_OUT_OF_MEMORY),
    ROW(-6, CLBlastOpenCLOutOfHostMemory, "CL_OUT_OF_HOST_MEMORY", ERR_OUT_OF_MEMORY),
    ROW(-11, CLBlastOpenCLBuildProgramFailure, "CL_BUILD_PROGRAM_FAILURE", ERR_BUILD),
    ROW(-30, CLBlastInvalidValue, "CL_INVALID_VALUE", ERR_CL),
    ROW(-36, CLBlastInvalidCommandQueue, "CL_INVALID_COMMAND_QUEUE", ERR_CL),
    ROW(-38, CLBlastInvalidMemObject, "CL_INVALID_MEM_OBJECT", ERR_CL),
    ROW(-42, CLBlastInvalidBinary, "CL_INVALID_BINARY", ERR_BUILD),
    ROW(-43, CLBlastInvalidBuildOptions, "CL_INVALID_BUILD_OPTIONS", ERR_BUILD),
    ROW(-44, CLBlastInvalidProgram, "CL_INVALID_PROGRAM", ERR_BUILD),
    ROW(-45, CLBlastInvalidProgramExecutable, "CL_INVALID_PROGRAM_EXECUTABLE", ERR_BUILD),
    ROW(-46, CLBlastInvalidKernelName, "CL_INVALID_KERNEL_NAME", ERR_CL),
    ROW(-47, CLBlastInvalidKernelDefinition, "CL_INVALID_KERNEL_DEFINITION", ERR_CL),
    ROW(-48, CLBlastInvalidKernel, "CL_INVALID_KERNEL", ERR_CL),
    ROW(-49, CLBlastInvalidArgIndex, "CL_INVALID_ARG_INDEX", ERR_CL),
    ROW(-50, CLBlastInvalidArgValue, "CL_INVALID_ARG_VALUE", ERR_CL),
    ROW(-51, CLBlastInvalidArgSize, "CL_INVALID_ARG_SIZE", ERR_CL),
    ROW(-52, CLBlastInvalidKernelArgs, "CL_INVALID_KERNEL_ARGS", ERR_CL),
    ROW(-53, CLBlastInvalidLocalNumDimensions, "CL_INVALID_WORK_DIMENSION", ERR_CL),
    ROW(-54, CLBlastInvalidLocalThreadsTotal, "CL_INVALID_WORK_GROUP_SIZE", ERR_CL),
    ROW(-55, CLBlastInvalidLocalThreadsDim, "CL_INVALID_WORK_ITEM_SIZE", ERR_CL),
    ROW(-56, CLBlastInvalidGlobalOffset, "CL_INVALID_GLOBAL_OFFSET", ERR_CL),
    ROW(-57, CLBlastInvalidEventWaitList, "CL_INVALID_EVENT_WAIT_LIST", ERR_CL),
    ROW(-58, CLBlastInvalidEvent, "CL_INVALID_EVENT", ERR_CL),
    ROW(-59, CLBlastInvalidOperation, "CL_INVALID_OPERATION", ERR_CL),
    ROW(-61, CLBlastInvalidBufferSize, "CL_INVALID_BUFFER_SIZE", ERR_CL),
    ROW(-63, CLBlastInvalidGlobalWorkSize, "CL_INVALID_GLOBAL_WORK_SIZE", ERR_CL),
    ROW(-1024, CLBlastNotImplemented, NULL, ERR_UNSUPPORTED),
    ROW(-1022, CLBlastInvalidMatrixA, NULL, ERR_INVALID_ARG),
    ROW(-1021, CLBlastInvalidMatrixB, NULL, ERR_INVALID_ARG),
    ROW(-1020, CLBlastInvalidMatrixC, NULL, ERR_INVALID_ARG),
    ROW(-1019, CLBlastInvalidVectorX, NULL, ERR_INVALID_ARG),
    ROW(-1018, CLBlastInvalidVectorY, NULL, ERR_INVALID_ARG),
    ROW(-1017, CLBlastInvalidDimension, NULL, ERR_INVALID_ARG),
    ROW(-1016, CLBlastInvalidLeadDimA, NULL, ERR_INVALID_ARG),
    ROW(-1015, CLBlastInvalidLeadDimB, NULL, ERR_INVALID_ARG),
    ROW(-1014, CLBlastInvalidLeadDimC, NULL, ERR_INVALID_ARG),
    ROW(-1013, CLBlastInvalidIncrementX, NULL, ERR_INVALID_ARG),
    ROW(-1012, CLBlastInvalidIncrementY, NULL, ERR_INVALID_ARG),
    ROW(-1011, CLBlastInsufficientMemoryA, NULL, ERR_INVALID_ARG),
    ROW(-1010, CLBlastInsufficientMemoryB, NULL, ERR_INVALID_ARG),
    ROW(-1009, CLBlastInsufficientMemoryC, NULL, ERR_INVALID_ARG),
    ROW(-1008, CLBlastInsufficientMemoryX, NULL, ERR_INVALID_ARG),
    ROW(-1007, CLBlastInsufficientMemoryY, NULL, ERR_INVALID_ARG),
    ROW(-2050, CLBlastInsufficientMemoryTemp, NULL, ERR_INVALID_ARG),
    ROW(-2049, CLBlastInvalidBatchCount, NULL, ERR_INVALID_ARG),
    ROW(-2048, CLBlastInvalidOverrideKernel, NULL, ERR_PLUGIN),
    ROW(-2047, CLBlastMissingOverrideParameter, NULL, ERR_PLUGIN),
    ROW(-2046, CLBlastInvalidLocalMemUsage, NULL, ERR_UNSUPPORTED),
    ROW(-2045, CLBlastNoHalfPrecision, NULL, ERR_UNSUPPORTED),
    ROW(-2044, CLBlastNoDoublePrecision, NULL, ERR_UNSUPPORTED),
    ROW(-2043, CLBlastInvalidVectorScalar, NULL, ERR_INVALID_ARG),
    ROW(-2042, CLBlastInsufficientMemoryScalar, NULL, ERR_INVALID_ARG),
    ROW(-2041, CLBlastDatabaseError, NULL, ERR_UNSUPPORTED),
    ROW(-2040, CLBlastUnknownError, NULL, ERR_INTERNAL),
    ROW(-2039, CLBlastUnexpectedError, NULL, ERR_INTERNAL),
};

static const status_row *row_of(int code)
{
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (statuses[i].code == code)
            return &statuses[i];
    return NULL;
}

/* Reports a CLBlast failure: "CLBlastSgemm: CLBlastInsufficientMemoryC (-1009)". */
kp_status blas_clblast_fail(kp_launch *l, const char *call, int code)
{
    const status_row *r = row_of(code);
    const kp_device_info *d = blas_host->device(l);
    const char *dev = d ? d->name : "?";
    if (!r)
        return blas_host->fail(l, KP_ERR_CL, "%s: CLBlast status %d on device \"%s\"", call, code,
                               dev);
    if (r->kp == KP_ERR_BUILD)
        return blas_host->fail(l, r->kp,
                               "%s: %s (%d, %s): CLBlast could not compile its kernels for device "
                               "\"%s\" (driver %s)",
                               call, r->name, code, r->cl, dev, d ? d->driver : "?");
    if (r->cl)
        return blas_host->fail(l, r->kp, "%s: %s (%d, %s) on device \"%s\"", call, r->name, code,
                               r->cl, dev);
    return blas_host->fail(l, r->kp, "%s: %s (%d) on device \"%s\"", call, r->name, code, dev);
}

/* CLBlast's statuses from -3 to -63 are the OpenCL errors of the same codes. */
kp_status blas_cl_fail(kp_launch *l, const char *call, int err)
{
    const status_row *r = row_of(err);
    if (!r || !r->cl)
        return blas_host->fail(l, KP_ERR_CL, "%s failed: OpenCL error %d", call, err);
    return blas_host->fail(l, r->kp, "%s failed: %s (%d)", call, r->cl, err);
}
