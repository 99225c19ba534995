/* The window's OpenGL context as native handles (native.c). */
#ifndef PBD_VIEW_NATIVE_H
#define PBD_VIEW_NATIVE_H

#include "pbd.h"

typedef struct GLFWwindow GLFWwindow;

/* Fills `gl` with the window's GLX context and X display; NULL, or why not (a static string:
 * the context is EGL, say). */
const char *pbd_view_gl_context(GLFWwindow *win, pbd_gl_context *gl);

#endif
