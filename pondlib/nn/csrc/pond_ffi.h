/* pondlib: reading XLA's FFI call frame (xla/ffi/api/c_api.h, the header jaxlib ships) in the C kernels
 * of pondlib.nn (built by pondlib.cprogram.native). A handler is
 *
 *     XLA_FFI_Error *handler(XLA_FFI_CallFrame *frame)
 *
 * and returns NULL (no error). XLA first calls it once with a metadata request (answered by
 * pond_ffi_metadata), then once per execution with the argument and result buffers. */
#ifndef POND_FFI_H
#define POND_FFI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xla/ffi/api/c_api.h"

/* Every thread of a parallel region runs in the calling thread's floating-point mode (whether
 * denormals are flushed to zero: XLA's threads flush them). OpenMP's threads keep the mode of the
 * thread that first started them, so without this a kernel's subnormal results would depend on the
 * pool's history. POND_FP_CAPTURE before the region, POND_FP_ENTER first and POND_FP_LEAVE last in it. */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define POND_FP_CAPTURE const unsigned pond_fp_caller = _mm_getcsr();
#define POND_FP_ENTER                                                                                    \
    const unsigned pond_fp_own = _mm_getcsr();                                                           \
    _mm_setcsr(pond_fp_caller);
#define POND_FP_LEAVE _mm_setcsr(pond_fp_own);
#else
#define POND_FP_CAPTURE
#define POND_FP_ENTER
#define POND_FP_LEAVE
#endif

/* 1 when the frame is XLA's metadata request (answered: this header's API version, no traits). */
static inline int pond_ffi_metadata(XLA_FFI_CallFrame *frame)
{
    XLA_FFI_Extension_Base *ext = frame->extension_start;
    if (ext == NULL || ext->type != XLA_FFI_Extension_Metadata)
        return 0;
    XLA_FFI_Metadata *meta = ((XLA_FFI_Metadata_Extension *)ext)->metadata;
    meta->api_version.major_version = XLA_FFI_API_MAJOR;
    meta->api_version.minor_version = XLA_FFI_API_MINOR;
    meta->traits = 0;
    return 1;
}

/* 1 when the frame holds n_args arguments and n_rets results, all arrays. */
static inline int pond_ffi_ready(const XLA_FFI_CallFrame *frame, int64_t n_args, int64_t n_rets)
{
    if (frame->args.size != n_args || frame->rets.size != n_rets)
        return 0;
    for (int64_t i = 0; i < n_args; ++i)
        if (frame->args.types[i] != XLA_FFI_ArgType_BUFFER)
            return 0;
    for (int64_t i = 0; i < n_rets; ++i)
        if (frame->rets.types[i] != XLA_FFI_RetType_BUFFER)
            return 0;
    return 1;
}

static inline XLA_FFI_Buffer *pond_ffi_arg(const XLA_FFI_CallFrame *frame, int64_t i)
{
    return (XLA_FFI_Buffer *)frame->args.args[i];
}

static inline XLA_FFI_Buffer *pond_ffi_ret(const XLA_FFI_CallFrame *frame, int64_t i)
{
    return (XLA_FFI_Buffer *)frame->rets.rets[i];
}

/* dimension `axis` of a buffer (1 past its rank: a scalar's missing axes count 1) */
static inline int64_t pond_ffi_dim(const XLA_FFI_Buffer *buffer, int64_t axis)
{
    return axis < buffer->rank ? buffer->dims[axis] : 1;
}

/* an error XLA raises in the caller (a Python exception naming `message`) */
static inline XLA_FFI_Error *pond_ffi_error(const XLA_FFI_CallFrame *frame, const char *message)
{
    XLA_FFI_Error_Create_Args args;
    memset(&args, 0, sizeof(args));
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.message = message;
    args.errc = XLA_FFI_Error_Code_RESOURCE_EXHAUSTED;
    return frame->api->XLA_FFI_Error_Create(&args);
}

#endif
