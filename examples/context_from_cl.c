/*
 * An application that already uses OpenCL hands clformer its own context,
 * device and queue (clformer_context_from_cl): clformer's work and the
 * application's own commands then share one in-order queue and one context.
 *
 *     context_from_cl          (the device: CLFORMER_DEVICE's choice)
 *
 * Here the application makes its OpenCL objects itself, creates a small
 * model on them, reads a parameter back through clformer, and checks that
 * its queue still works after clformer is done with it. Exits non-zero on
 * any failure.
 */
#include <clformer.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>

static int fail(const char *doing)
{
    fprintf(stderr, "context_from_cl: %s: %s\n", doing, clformer_last_error());
    return 1;
}

static int fail_cl(const char *call, cl_int err)
{
    fprintf(stderr, "context_from_cl: %s failed with OpenCL error %d\n", call, (int)err);
    return 1;
}

/* The application's own choice of device; here CLFORMER_DEVICE's, found
 * through clformer's selector so that the test suite can name the device. */
static int choose_device(cl_device_id *out)
{
    clformer_device_info *devs = NULL;
    size_t n = 0, chosen = 0;
    clformer_context_params env;
    if (clformer_list_devices(&devs, &n) != CLFORMER_OK ||
        clformer_context_params_from_env(&env) != CLFORMER_OK ||
        clformer_select_device(devs, n, env.device, &chosen) != CLFORMER_OK) {
        clformer_free(devs);
        return fail("choosing a device");
    }
    const int pi = devs[chosen].platform_index, di = devs[chosen].device_index;
    clformer_free(devs);
    cl_platform_id platforms[16];
    cl_uint np = 0, nd = 0;
    cl_int err = clGetPlatformIDs(16, platforms, &np);
    if (err != CL_SUCCESS || (cl_uint)pi >= np) return fail_cl("clGetPlatformIDs", err);
    cl_device_id devices[16];
    err = clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, 16, devices, &nd);
    if (err != CL_SUCCESS || (cl_uint)di >= nd) return fail_cl("clGetDeviceIDs", err);
    *out = devices[di];
    return 0;
}

/* clformer's part: a tiny model made on the application's queue; its final
 * encoder LayerNorm starts at one (docs/MODEL.md), read back through the queue. */
static int use_clformer(cl_context context, cl_device_id device, cl_command_queue queue)
{
    clformer_context *ctx = NULL;
    if (clformer_context_from_cl(context, device, queue, NULL, &ctx) != CLFORMER_OK)
        return fail("clformer_context_from_cl");
    printf("clformer runs on %s (%s)\n", clformer_context_device(ctx)->name,
           clformer_device_kind_name(clformer_context_profile(ctx)->kind));
    clformer_config config;
    clformer_config_default(&config);
    config.d_model = 16, config.n_heads = 2, config.d_ff = 32;
    config.n_enc_layers = config.n_dec_layers = 1;
    config.src_vocab = config.tgt_vocab = 12, config.max_len = 8;
    clformer_model *model = NULL;
    float norm[16];
    int rc = 0;
    if (clformer_model_create(ctx, &config, 1, &model) != CLFORMER_OK)
        rc = fail("creating a model");
    else if (clformer_model_read_tensor(model, "transformer.encoder.norm.weight", false, norm,
                                        16) != CLFORMER_OK)
        rc = fail("reading a parameter");
    for (int i = 0; rc == 0 && i < 16; i++)
        if (norm[i] != 1.0f) {
            fprintf(stderr, "context_from_cl: norm weight %d is %g, not 1\n", i, norm[i]);
            rc = 1;
        }
    if (rc == 0)
        printf("model of %zu parameters made on the application's queue\n",
               clformer_model_parameter_count(model));
    clformer_model_free(model);
    clformer_context_free(ctx); /* waits for the queue; releases only clformer's references */
    return rc;
}

/* The application's part after clformer: its queue and context still work. */
static int use_queue(cl_context context, cl_command_queue queue)
{
    cl_int err;
    cl_mem buf = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof(float) * 4, NULL, &err);
    if (err != CL_SUCCESS) return fail_cl("clCreateBuffer", err);
    const float in[4] = {1, 2, 3, 4};
    float out[4] = {0};
    err = clEnqueueWriteBuffer(queue, buf, CL_FALSE, 0, sizeof in, in, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(queue, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
    clReleaseMemObject(buf);
    if (err != CL_SUCCESS) return fail_cl("clEnqueueReadBuffer", err);
    if (out[3] != 4.0f) {
        fprintf(stderr, "context_from_cl: the queue returned %g, not 4\n", out[3]);
        return 1;
    }
    printf("the application's queue still works after clformer\n");
    return 0;
}

int main(void)
{
    cl_device_id device;
    if (choose_device(&device) != 0) return 1;
    cl_int err;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS) return fail_cl("clCreateContext", err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(context);
        return fail_cl("clCreateCommandQueue", err);
    }
    int rc = use_clformer(context, device, queue);
    if (rc == 0) rc = use_queue(context, queue);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return rc;
}
