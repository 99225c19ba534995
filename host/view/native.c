/* The window's OpenGL context as native handles, for the solver to share buffers with.
 * GLFW's two native functions are declared here as glfw3native.h declares them, because that
 * header's X11 part needs the Xrandr headers (and GL/glx.h, which glad's header excludes). */
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "view/native.h"

typedef struct _XDisplay Display;
typedef struct __GLXcontextRec *GLXContext;
GLFWAPI GLXContext glfwGetGLXContext(GLFWwindow *window);
GLFWAPI Display *glfwGetX11Display(void);

const char *pbd_view_gl_context(GLFWwindow *win, pbd_gl_context *gl)
{
    *gl = (pbd_gl_context){0};
    if (glfwGetWindowAttrib(win, GLFW_CONTEXT_CREATION_API) != GLFW_NATIVE_CONTEXT_API)
        return "the window's OpenGL context is not a GLX one";
    GLXContext context = glfwGetGLXContext(win);
    Display *display = glfwGetX11Display();
    if (!context || !display)
        return "the window has no GLX context";
    gl->context = (void *)context;
    gl->glx_display = (void *)display;
    return NULL;
}
