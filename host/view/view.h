/* `pbd view`: the interactive viewer (GLFW 3.3, OpenGL 3.3 core through a glad loader made
 * at build time). Part of the command line: built only where GLFW is found. */
#ifndef PBD_VIEW_H
#define PBD_VIEW_H

#include "pbd.h"

typedef struct pbd_view_options {
    const char *scene;
    pbd_solver_desc desc;
    void (*tweak)(const void *ctx, pbd_scene *s); /* the command line's overrides */
    const void *ctx;
    long frames;            /* > 0: stop after this many frames (with screenshot / bench) */
    const char *screenshot; /* write a PNG of the last frame, then exit */
    int bench;              /* print fps and the split of a frame, then exit */
    int compare_momentum;   /* the scene twice: with and without the correction */
    int verify;             /* check each upload: the vertex buffer read back from GL */
    int drag_particle;      /* >= 0: pull this particle toward drag_target from the start, as
                               a mouse drag does, and report where it got (-1: none) */
    float drag_target[3];
    int width, height; /* window size, pixels (0: 1280 x 720) */
    int read_back;     /* read positions back even where the device could share them */
} pbd_view_options;

/* Runs the viewer; returns the exit code (messages go to stderr). */
int pbd_cli_view(const pbd_view_options *o);

#endif
