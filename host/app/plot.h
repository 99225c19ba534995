/* Line plots as PNG files, for the figures `pbd experiments` draws (energy and momentum over
 * time). Small on purpose: one call draws one plot with axes, ticks, labels, a title and a
 * legend, using stb_easy_font for text and stb_image_write for the PNG. Part of the CLI, so
 * that the library does not need libstb. */
#ifndef PBD_APP_PLOT_H
#define PBD_APP_PLOT_H

#include "pbd.h"

typedef struct pbd_plot_series {
    const char *label; /* legend text (printable ASCII; anything else is drawn as '?') */
    const double *x;   /* n points; when x never decreases, large n is drawn per pixel column */
    const double *y;
    int n;
    unsigned rgb; /* 0xRRGGBB; 0 = the default palette's colour for this series' index */
    int dashed;   /* 1: dashed line (for "without correction" variants) */
} pbd_plot_series;

typedef struct pbd_plot {
    const char *title; /* NULL or "" leaves it out, as for the axis labels */
    const char *xlabel;
    const char *ylabel;
    int width, height; /* pixels, each in [160, 8192]; 0 = 900 x 560 */
    const pbd_plot_series *series;
    int num_series;
    int log_y; /* 1: logarithmic y axis (values <= 0 skipped, leaving a gap) */
    int log_x; /* 1: logarithmic x axis, likewise; a point skipped for it widens neither axis */
} pbd_plot;

/* Draws the plot and writes it to `path` as PNG, via a temporary file renamed into place (no
 * half-written file on failure). Errors: PBD_ERR_IO "PATH: cannot write: ...", PBD_ERR_ARGUMENT
 * for no series / n < 1 / non-finite data ("PATH: series 'LABEL' point 12 is not finite") /
 * nothing positive on a logarithmic axis ("PATH: no positive x values for a logarithmic axis"),
 * PBD_ERR_MEMORY. */
pbd_status pbd_plot_png(const pbd_plot *p, const char *path, pbd_error *err);

#endif
