/* Line plots as PNG or PDF files, drawn by PLplot (its cairo drivers): the figures of
 * `pbd plot`, `pbd experiments` and `pbd bench --plot`. Part of the CLI. A build without
 * PLplot (libplplot-dev, found through pkg-config) has the same functions, which then fail
 * saying what to install. */
#ifndef PBD_APP_PLOT_H
#define PBD_APP_PLOT_H

#include "pbd.h"

typedef struct pbd_plot_series {
    const char *label; /* legend text */
    const double *x;   /* n points */
    const double *y;
    int n;
    unsigned rgb; /* 0xRRGGBB; 0 = the default palette's colour for this series' index */
    int dashed;   /* 1: dashed line (for "without correction" variants) */
} pbd_plot_series;

/* One panel: axes, labels, a title, a legend and its series. */
typedef struct pbd_plot {
    const char *title; /* NULL or "" leaves it out, as for the axis labels */
    const char *xlabel;
    const char *ylabel;
    int width, height; /* the whole figure, pixels (PNG) or points (PDF), each in [160, 8192];
                          0 = 900 wide and 560 high, or 330 a panel for several (read from
                          the first panel) */
    const pbd_plot_series *series;
    int num_series;
    int log_y;         /* 1: logarithmic y axis (values <= 0 skipped, leaving a gap) */
    int log_x;         /* 1: logarithmic x axis, likewise */
    int legend_bottom; /* 1: the legend at the bottom right (for rising lines), else top right */
} pbd_plot;

/* Whether `path` names a file pbd_plot_write draws: it ends in .png or .pdf. */
int pbd_plot_name_ok(const char *path);

/* Draws `num_panels` panels, stacked top to bottom, to `path`: a PNG when it ends in .png, a
 * PDF when it ends in .pdf. The file is written under a temporary name and renamed into
 * place, so it appears whole or not at all. Errors (one line, starting with the path):
 * PBD_ERR_ARGUMENT for another extension, no series, a series without points, a value
 * that is not finite ("PATH: series 'LABEL' point 12 is not finite"), nothing positive on a
 * logarithmic axis, a size out of range, or a build without PLplot (which names the Debian
 * packages to install); PBD_ERR_IO when the file cannot be written or PLplot lacks its
 * cairo driver. */
pbd_status pbd_plot_write(const pbd_plot *panels, int num_panels, const char *path, pbd_error *err);

/* `pbd plot STATS.csv OUT`: kinetic energy, |P| and |L| of each body over time, from a
 * `pbd run --stats` file, as three panels. A malformed file is refused naming FILE:LINE,
 * what was found and what was expected. */
pbd_status pbd_plot_stats(const char *csv, const char *out, pbd_error *err);

/* 1 where this build draws plots (PLplot was found), else 0. */
int pbd_plot_available(void);

#endif
