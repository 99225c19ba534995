/* Every kernel's parameters, by name and in order: the one table the OpenCL backend sets
 * kernel arguments from (by name, never by position), checked against the built program's
 * clGetKernelArgInfo by a test, so a kernel whose parameters are reordered, renamed, added
 * or removed fails that test instead of running with the wrong arguments. */
#ifndef PBD_SOLVER_KERNEL_PARAMS_H
#define PBD_SOLVER_KERNEL_PARAMS_H

typedef struct pbd_kernel_params {
    const char *kernel;        /* the kernel's name */
    const char *const *params; /* its parameter names, in order */
    int count;                 /* how many */
} pbd_kernel_params;

extern const pbd_kernel_params pbd_kernel_param_table[];
extern const int pbd_kernel_param_table_count;

/* The entry of `kernel`, or NULL. */
const pbd_kernel_params *pbd_kernel_params_find(const char *kernel);
/* The index of parameter `param` of `k`, or -1. */
int pbd_kernel_param_index(const pbd_kernel_params *k, const char *param);

#endif
