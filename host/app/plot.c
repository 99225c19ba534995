/* PNG line plots (plot.h). Everything is drawn into an RGB buffer with integer pixel
 * operations: axis-aligned rectangles for the text (stb_easy_font's quads), the frame and the
 * ticks, and 2 px stepped lines for the data. There is no anti-aliasing, so every series keeps
 * its exact colour, which is what lets tests (and readers zooming in) tell the curves apart. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/output.h"
#include "app/plot.h"

/* stb_easy_font is header-only and all-static; the functions we do not call would warn. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop
/* Declarations only: the implementation is in Debian's libstb (-lstb). */
#include <stb/stb_image_write.h>

#define DEFAULT_W   900
#define DEFAULT_H   560
#define MIN_SIZE    160
#define MAX_SIZE    8192
#define MAX_TICKS   64
#define TEXT_MAX    160 /* characters drawn of one string; the rest is cut */
#define GLYPH_H     10  /* rows of an easy_font line: caps 0..7, descenders to 9 */
#define BG          0xffffffu
#define GRID        0xe6e6e6u
#define INK         0x222222u
#define FRAME       0x444444u
#define DASH_ON     9.0 /* px drawn, then DASH_PERIOD - DASH_ON px skipped */
#define DASH_PERIOD 15.0

/* Tableau-like colours: distinguishable from each other and from the grey frame and grid. */
static const unsigned palette[8] = {0x1f77b4, 0xd62728, 0x2ca02c, 0xff7f0e,
                                    0x9467bd, 0x17becf, 0x8c564b, 0xe377c2};

typedef struct canvas {
    int w, h;
    unsigned char *px;
    int cx0, cy0, cx1, cy1; /* clip rectangle, half-open */
} canvas;

static void canvas_unclip(canvas *c)
{
    c->cx0 = 0;
    c->cy0 = 0;
    c->cx1 = c->w;
    c->cy1 = c->h;
}

/* Fills [x0, x1) x [y0, y1), clipped. */
static void fill_rect(canvas *c, int x0, int y0, int x1, int y1, unsigned rgb)
{
    if (x0 < c->cx0)
        x0 = c->cx0;
    if (y0 < c->cy0)
        y0 = c->cy0;
    if (x1 > c->cx1)
        x1 = c->cx1;
    if (y1 > c->cy1)
        y1 = c->cy1;
    for (int y = y0; y < y1; ++y) {
        unsigned char *p = c->px + 3 * ((size_t)y * (size_t)c->w + (size_t)x0);
        for (int x = x0; x < x1; ++x, p += 3) {
            p[0] = (unsigned char)(rgb >> 16);
            p[1] = (unsigned char)(rgb >> 8);
            p[2] = (unsigned char)rgb;
        }
    }
}

static unsigned pixel_at(const canvas *c, int x, int y)
{
    const unsigned char *p = c->px + 3 * ((size_t)y * (size_t)c->w + (size_t)x);
    return (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2];
}

/* ---- text ------------------------------------------------------------------------------ */

/* easy_font indexes a table by character - 32: anything outside printable ASCII would read
 * past it. NULL becomes "". */
static void text_clean(const char *s, char *out)
{
    size_t i = 0;
    for (; s && s[i] && i < TEXT_MAX; ++i)
        out[i] = s[i] >= 32 && s[i] <= 126 ? s[i] : '?';
    out[i] = '\0';
}

/* Advance of one character at `scale`: one pixel tighter than easy_font's when scaled up,
 * because its 1 px gap doubled looks sparse. */
static int char_advance(char ch, int scale)
{
    char one[2] = {ch, '\0'};
    return stb_easy_font_width(one) * scale - (scale > 1 ? 1 : 0);
}

static int text_width(const char *s, int scale)
{
    char buf[TEXT_MAX + 1];
    text_clean(s, buf);
    int w = 0;
    for (const char *q = buf; *q; ++q)
        w += char_advance(*q, scale);
    return w > 0 && scale > 1 ? w + 1 : w;
}

/* Draws `s` with its top-left corner at (x, y); rotated, the text reads upwards and (x, y) is
 * its bottom-left corner (the top of the glyphs faces left). */
static void draw_text(canvas *c, const char *s, int x, int y, int scale, unsigned rgb, int rotated)
{
    char buf[TEXT_MAX + 1];
    text_clean(s, buf);
    float vbuf[64 * 16]; /* one character's quads: 16 floats each, at most ~30 per glyph */
    int pen = 0;
    for (const char *q = buf; *q; ++q) {
        char one[2] = {*q, '\0'};
        int quads = stb_easy_font_print(0.0f, 0.0f, one, NULL, vbuf, (int)sizeof vbuf);
        for (int k = 0; k < quads; ++k) {
            const float *v = vbuf + 16 * k; /* vertices 0 and 2 are opposite corners */
            int u0 = pen + (int)lrintf(v[0]) * scale, u1 = pen + (int)lrintf(v[8]) * scale;
            int w0 = (int)lrintf(v[1]) * scale, w1 = (int)lrintf(v[9]) * scale;
            if (*q == '|') { /* easy_font's bar is cap height, which reads as "I" in "|L|" */
                w0 = -scale;
                w1 = 9 * scale;
            }
            if (rotated)
                fill_rect(c, x + w0, y - u1, x + w1, y - u0, rgb);
            else
                fill_rect(c, x + u0, y + w0, x + u1, y + w1, rgb);
        }
        pen += char_advance(*q, scale);
    }
}

/* ---- lines ----------------------------------------------------------------------------- */

typedef struct pen {
    unsigned rgb;
    int dashed;
    double phase; /* arc length so far, px: dashes run on across segments and columns */
} pen;

/* A 2 px line from (x0, y0) to (x1, y1), clipped to the canvas' clip rectangle first so a
 * segment far outside costs nothing. */
static void draw_line(canvas *c, pen *p, double x0, double y0, double x1, double y1)
{
    double dx = x1 - x0, dy = y1 - y0, len = hypot(dx, dy);
    double t0 = 0.0, t1 = 1.0;
    const double pp[4] = {-dx, dx, -dy, dy};
    const double qq[4] = {x0 - c->cx0, c->cx1 - x0, y0 - c->cy0, c->cy1 - y0};
    for (int k = 0; k < 4; ++k) {
        if (pp[k] == 0.0) {
            if (qq[k] < 0.0)
                t0 = 2.0;
            continue;
        }
        double r = qq[k] / pp[k];
        if (pp[k] < 0.0 && r > t0)
            t0 = r;
        else if (pp[k] > 0.0 && r < t1)
            t1 = r;
    }
    if (t0 <= t1) {
        double sx = x0 + t0 * dx, sy = y0 + t0 * dy, ex = x0 + t1 * dx, ey = y0 + t1 * dy;
        int steps = (int)ceil(fmax(fabs(ex - sx), fabs(ey - sy)));
        if (steps < 1)
            steps = 1;
        for (int i = 0; i <= steps; ++i) {
            double f = (double)i / steps;
            if (p->dashed && fmod(p->phase + (t0 + f * (t1 - t0)) * len, DASH_PERIOD) >= DASH_ON)
                continue;
            int ix = (int)floor(sx + f * (ex - sx) - 0.5),
                iy = (int)floor(sy + f * (ey - sy) - 0.5);
            fill_rect(c, ix, iy, ix + 2, iy + 2, p->rgb);
        }
    }
    p->phase += len;
}

/* A polyline in pixel space with breaks (log-axis gaps). A point with no neighbour in its run
 * would draw nothing, so it becomes a dot. */
typedef struct trace {
    canvas *c;
    pen pen;
    int run; /* points in the current unbroken run */
    double px, py;
} trace;

static void trace_point(trace *t, double x, double y)
{
    if (t->run > 0)
        draw_line(t->c, &t->pen, t->px, t->py, x, y);
    t->px = x;
    t->py = y;
    t->run++;
}

static void trace_break(trace *t)
{
    if (t->run == 1) {
        int ix = (int)floor(t->px - 1.5), iy = (int)floor(t->py - 1.5);
        fill_rect(t->c, ix, iy, ix + 4, iy + 4, t->pen.rgb);
    }
    t->run = 0;
}

/* Points that fall in one pixel column, reduced to first, extremes and last in their order:
 * the drawn shape is the same as with every point, at four points per column. */
typedef struct column {
    int col, count;
    double fx, fy, lx, ly, minx, miny, maxx, maxy;
    int mini, maxi, lasti;
} column;

static void column_flush(column *g, trace *t)
{
    if (g->count == 0)
        return;
    trace_point(t, g->fx, g->fy);
    int a = g->mini < g->maxi ? g->mini : g->maxi, b = g->mini < g->maxi ? g->maxi : g->mini;
    if (a > 0 && a < g->lasti)
        trace_point(t, a == g->mini ? g->minx : g->maxx, a == g->mini ? g->miny : g->maxy);
    if (b > 0 && b < g->lasti && b != a)
        trace_point(t, b == g->mini ? g->minx : g->maxx, b == g->mini ? g->miny : g->maxy);
    if (g->lasti > 0)
        trace_point(t, g->lx, g->ly);
    g->count = 0;
}

static void column_add(column *g, trace *t, double x, double y)
{
    int col = (int)floor(x);
    if (g->count > 0 && col != g->col)
        column_flush(g, t);
    if (g->count == 0) {
        g->col = col;
        g->fx = g->minx = g->maxx = x;
        g->fy = g->miny = g->maxy = y;
        g->mini = g->maxi = 0;
    }
    if (y < g->miny) {
        g->minx = x;
        g->miny = y;
        g->mini = g->count;
    }
    if (y > g->maxy) {
        g->maxx = x;
        g->maxy = y;
        g->maxi = g->count;
    }
    g->lx = x;
    g->ly = y;
    g->lasti = g->count;
    g->count++;
}

/* ---- axes ------------------------------------------------------------------------------ */

typedef struct axis {
    double lo, hi; /* drawn range; log10 of the values on a log axis */
    double step;   /* between ticks' values; 0 for 1-2-5 or decade ticks on a log axis */
    int n;
    double at[MAX_TICKS];    /* tick positions, in the space of lo..hi */
    double value[MAX_TICKS]; /* tick values */
    char label[MAX_TICKS][32];
} axis;

/* "%.*e", shortened: "1.50e-05" -> "1.5e-5", "1e+06" -> "1e6". */
static void format_exp(double v, int sig, char out[32])
{
    snprintf(out, 32, "%.*e", sig - 1, v);
    char *e = strchr(out, 'e');
    if (!e)
        return;
    char *m = e; /* strip the mantissa's trailing zeros (and its point) */
    if (strchr(out, '.') && strchr(out, '.') < e) {
        while (m[-1] == '0')
            --m;
        if (m[-1] == '.')
            --m;
    }
    char *s = e + 1, exp[8];
    size_t k = 0;
    exp[k++] = 'e';
    if (*s == '-')
        exp[k++] = '-';
    if (*s == '+' || *s == '-')
        ++s;
    while (*s == '0' && s[1])
        ++s;
    while (*s && k < sizeof exp - 1)
        exp[k++] = *s++;
    exp[k] = '\0';
    memcpy(m, exp, k + 1);
}

/* Significant digits that tell ticks `step` apart at magnitude up to `m`. */
static int tick_digits(double m, double step)
{
    if (m < step)
        m = step;
    int sig = (int)floor(log10(m)) - (int)floor(log10(step) + 1e-9) + 1;
    return sig < 1 ? 1 : sig > 15 ? 15 : sig;
}

/* Labels in one style per axis, so they line up and read alike: fixed-point with as many
 * decimals as the step needs ("0.0 0.5 1.0"), or, for values too large or small for that,
 * short exponents ("2e-5 4e-5"); on a log axis with 1-2-5 ticks, the decimals each value
 * needs. */
static void axis_format(axis *a)
{
    double mx = 0.0, mn = INFINITY;
    for (int i = 0; i < a->n; ++i)
        if (a->value[i] != 0.0) {
            mx = fmax(mx, fabs(a->value[i]));
            mn = fmin(mn, fabs(a->value[i]));
        }
    int expo = a->step > 0.0 ? mx >= 1e6 || (mx > 0.0 && mx < 1e-3) : mn < 1e-3 || mx >= 1e5;
    for (int i = 0; i < a->n; ++i) {
        double v = a->value[i];
        if (expo && v == 0.0) {
            snprintf(a->label[i], sizeof a->label[i], "0");
        } else if (expo) {
            format_exp(v, a->step > 0.0 ? tick_digits(mx, a->step) : 1, a->label[i]);
        } else {
            double unit = a->step > 0.0 ? a->step : fabs(v);
            int dec = (int)-floor(log10(unit) + 1e-9);
            snprintf(a->label[i], sizeof a->label[i], "%.*f", dec < 0 ? 0 : dec, v);
        }
    }
}

/* Number of multiples of step in [lo, hi]; `extend` counts those of the range widened to the
 * multiples just outside it. */
static int tick_count(double lo, double hi, double step, int extend)
{
    double a = extend ? floor(lo / step + 1e-9) : ceil(lo / step - 1e-9);
    double b = extend ? ceil(hi / step - 1e-9) : floor(hi / step + 1e-9);
    return (int)(b - a) + 1;
}

/* Picks a 1, 2 or 5 x 10^k step giving 5 to 8 ticks in [*lo, *hi] (at least min_step), first
 * without touching the range, then widening it to the next multiples; failing both, the count
 * nearest 6. Returns the step; *lo and *hi may widen. */
static double nice_step(double *lo, double *hi, double min_step)
{
    static const double mant[3] = {5.0, 2.0, 1.0};
    double top = pow(10.0, ceil(log10(*hi - *lo)));
    double best = top;
    int best_miss = INT_MAX;
    for (int extend = 0; extend < 2; ++extend) {
        for (int k = 0; k < 6; ++k) {
            for (int m = 0; m < 3; ++m) {
                double step = mant[m] * top * pow(10.0, -k);
                if (step < min_step)
                    continue;
                int n = tick_count(*lo, *hi, step, extend);
                if (n >= 5 && n <= 8) {
                    if (extend) {
                        *lo = floor(*lo / step + 1e-9) * step;
                        *hi = ceil(*hi / step - 1e-9) * step;
                    }
                    return step;
                }
                int miss = abs(n - 6);
                if (!extend && miss < best_miss) {
                    best_miss = miss;
                    best = step;
                }
            }
        }
    }
    return best;
}

static void axis_add(axis *a, double at, double value)
{
    if (a->n >= MAX_TICKS)
        return;
    a->at[a->n] = at;
    a->value[a->n] = value;
    a->n++;
}

static void linear_ticks(axis *a)
{
    double step = a->step = nice_step(&a->lo, &a->hi, 0.0);
    double i0 = ceil(a->lo / step - 1e-9), i1 = floor(a->hi / step + 1e-9);
    for (double i = i0; i <= i1; i += 1.0) {
        double v = i * step;
        if (fabs(v) < step * 1e-9)
            v = 0.0; /* not "-2.8e-17", nor "-0.0" */
        axis_add(a, v, v);
    }
    axis_format(a);
}

/* Ticks at m x 10^k for the mantissas given, inside [lo, hi] (log10 space). */
static int log_mantissa_ticks(axis *a, const double *mant, int nm, int commit)
{
    int n = 0;
    for (double k = floor(a->lo); k <= ceil(a->hi); k += 1.0) {
        for (int m = 0; m < nm; ++m) {
            double t = log10(mant[m]) + k;
            if (t < a->lo - 1e-9 || t > a->hi + 1e-9)
                continue;
            if (commit)
                axis_add(a, t, mant[m] * pow(10.0, k));
            n++;
        }
    }
    return n;
}

/* Decades when the axis spans many; 1-2-5 within a few; below that, a linear axis' ticks
 * placed logarithmically (a span under ~1.5 decades reads better with plain numbers). */
static void log_ticks(axis *a)
{
    static const double one[1] = {1.0}, ote[3] = {1.0, 2.0, 5.0};
    double span = a->hi - a->lo;
    a->step = 0.0;
    int n125 = log_mantissa_ticks(a, ote, 3, 0);
    if (span >= 4.0) {
        double step = nice_step(&a->lo, &a->hi, 1.0);
        for (double k = ceil(a->lo / step - 1e-9) * step; k <= a->hi + 1e-9; k += step)
            axis_add(a, k, pow(10.0, k));
    } else if (n125 >= 4 && n125 <= 9) {
        log_mantissa_ticks(a, ote, 3, 1);
    } else if (log_mantissa_ticks(a, one, 1, 0) >= 3) {
        log_mantissa_ticks(a, one, 1, 1);
    } else {
        /* Widening this range would not widen the axis: ticks outside it are dropped. */
        double vlo = pow(10.0, a->lo), vhi = pow(10.0, a->hi);
        a->step = nice_step(&vlo, &vhi, 0.0);
        for (double i = ceil(vlo / a->step - 1e-9); i * a->step <= vhi; i += 1.0) {
            double v = i * a->step;
            if (v > 0.0 && log10(v) >= a->lo - 1e-12 && log10(v) <= a->hi + 1e-12)
                axis_add(a, log10(v), v);
        }
    }
    axis_format(a);
}

/* Range of the data with 5% padding each side; a constant gets a range around it. */
static void axis_range(axis *a, double lo, double hi, int log)
{
    double span = hi - lo;
    if (span <= 1e-12 * fmax(fabs(lo), fabs(hi))) {
        double half = log ? 0.5 : lo == 0.0 ? 1.0 : 0.1 * fabs(lo);
        lo -= half;
        hi += half;
        span = hi - lo;
    }
    a->lo = lo - 0.05 * span;
    a->hi = hi + 0.05 * span;
    a->n = 0;
}

/* ---- layout and drawing ---------------------------------------------------------------- */

typedef struct layout {
    int scale;          /* text scale: 2 on plots large enough, else 1 */
    int x0, y0, x1, y1; /* plot area, half-open */
    int legend_w, legend_h, legend_row;
} layout;

static const char *series_label(const pbd_plot_series *s)
{
    return s->label ? s->label : "";
}

static unsigned series_rgb(const pbd_plot *p, int i)
{
    unsigned rgb = p->series[i].rgb & 0xffffffu;
    return rgb ? rgb : palette[i % 8];
}

static int has_text(const char *s)
{
    return s && s[0];
}

/* Margins from what goes around the plot area; with legend_outside, the legend gets a column
 * to the right of it. */
static void make_layout(const pbd_plot *p, const axis *ax, const axis *ay, int w, int h,
                        int legend_outside, layout *L)
{
    int s = L->scale = w >= 480 && h >= 320 ? 2 : 1;
    int th = GLYPH_H * s, pad = 6 * s, tick = 3 * s;
    int ywidest = 0;
    for (int i = 0; i < ay->n; ++i) {
        int tw = text_width(ay->label[i], s);
        ywidest = tw > ywidest ? tw : ywidest;
    }
    int lw = 0;
    for (int i = 0; i < p->num_series; ++i) {
        int tw = text_width(series_label(&p->series[i]), s);
        lw = tw > lw ? tw : lw;
    }
    L->legend_row = th + 3 * s;
    L->legend_w = pad + 14 * s + pad + lw + pad;
    L->legend_h = pad + p->num_series * L->legend_row - 3 * s + pad;

    L->x0 = pad + (has_text(p->ylabel) ? th + pad : 0) + ywidest + tick + 2 * s;
    L->y0 = has_text(p->title) ? pad + th + pad + 2 * s : pad + th / 2;
    int xlast = ax->n > 0 ? text_width(ax->label[ax->n - 1], s) / 2 + 2 : 0;
    L->x1 = w - (pad > xlast ? pad : xlast);
    if (legend_outside)
        L->x1 = w - pad - L->legend_w - pad;
    L->y1 = h - (pad + th + tick + 2 * s + (has_text(p->xlabel) ? th + pad : 0));
    if (L->x1 < L->x0 + 10)
        L->x1 = L->x0 + 10;
    if (L->y1 < L->y0 + 10)
        L->y1 = L->y0 + 10;
}

static double map(double v, double lo, double hi, double p0, double p1)
{
    return p0 + (v - lo) / (hi - lo) * (p1 - p0);
}

static void draw_series(canvas *c, const pbd_plot *p, const axis *ax, const axis *ay,
                        const layout *L)
{
    /* Pixel centres of the area's edges: the range maps onto the inside of the frame. */
    double X0 = L->x0 + 0.5, X1 = L->x1 - 0.5, Y0 = L->y1 - 0.5, Y1 = L->y0 + 0.5;
    c->cx0 = L->x0 + 1;
    c->cy0 = L->y0 + 1;
    c->cx1 = L->x1 - 1;
    c->cy1 = L->y1 - 1;
    for (int i = 0; i < p->num_series; ++i) {
        const pbd_plot_series *s = &p->series[i];
        trace t = {c, {series_rgb(p, i), s->dashed != 0, 0.0}, 0, 0.0, 0.0};
        /* Sorted among the points drawn; log10 keeps the order, so columns hold on a log axis. */
        int sorted = 1;
        double prev = -INFINITY;
        for (int k = 0; k < s->n && sorted; ++k) {
            if (p->log_x && s->x[k] <= 0.0)
                continue;
            sorted = s->x[k] >= prev;
            prev = s->x[k];
        }
        int decimate = sorted && s->n > 2 * (L->x1 - L->x0);
        column g = {0};
        for (int k = 0; k < s->n; ++k) {
            double x = s->x[k], y = s->y[k];
            if ((p->log_x && x <= 0.0) || (p->log_y && y <= 0.0)) {
                column_flush(&g, &t);
                trace_break(&t);
                continue;
            }
            x = p->log_x ? log10(x) : x;
            y = p->log_y ? log10(y) : y;
            double px = map(x, ax->lo, ax->hi, X0, X1), py = map(y, ay->lo, ay->hi, Y0, Y1);
            if (decimate)
                column_add(&g, &t, px, py);
            else
                trace_point(&t, px, py);
        }
        column_flush(&g, &t);
        trace_break(&t);
    }
    canvas_unclip(c);
}

/* Pixels of data (not background, not grid) under a legend at (x, y). */
static long legend_cover(const canvas *c, int x, int y, const layout *L)
{
    long n = 0;
    for (int j = y; j < y + L->legend_h && j < c->h; ++j)
        for (int i = x; i < x + L->legend_w && i < c->w; ++i) {
            unsigned v = pixel_at(c, i, j);
            n += v != BG && v != GRID;
        }
    return n;
}

static void draw_legend(canvas *c, const pbd_plot *p, const layout *L, int x, int y)
{
    int s = L->scale, pad = 6 * s;
    fill_rect(c, x, y, x + L->legend_w, y + L->legend_h, BG);
    fill_rect(c, x, y, x + L->legend_w, y + 1, 0xaaaaaau);
    fill_rect(c, x, y + L->legend_h - 1, x + L->legend_w, y + L->legend_h, 0xaaaaaau);
    fill_rect(c, x, y, x + 1, y + L->legend_h, 0xaaaaaau);
    fill_rect(c, x + L->legend_w - 1, y, x + L->legend_w, y + L->legend_h, 0xaaaaaau);
    for (int i = 0; i < p->num_series; ++i) {
        int ry = y + pad + i * L->legend_row;
        double mid = ry + 3.5 * s + 0.5;
        pen pn = {series_rgb(p, i), p->series[i].dashed != 0, 0.0};
        draw_line(c, &pn, x + pad + 1.0, mid, x + pad + 14.0 * s - 1.0, mid);
        draw_text(c, series_label(&p->series[i]), x + pad + 14 * s + pad, ry, s, INK, 0);
    }
}

/* Draws everything; returns how many data pixels the legend had to cover where it went (0
 * when outside). */
static long render(canvas *c, const pbd_plot *p, const axis *ax, const axis *ay, int legend_outside)
{
    layout L;
    make_layout(p, ax, ay, c->w, c->h, legend_outside, &L);
    int s = L.scale, pad = 6 * s, th = GLYPH_H * s, tick = 3 * s;
    canvas_unclip(c);
    fill_rect(c, 0, 0, c->w, c->h, BG);

    double X0 = L.x0 + 0.5, X1 = L.x1 - 0.5, Y0 = L.y1 - 0.5, Y1 = L.y0 + 0.5;
    for (int i = 0; i < ax->n; ++i) {
        int gx = (int)floor(map(ax->at[i], ax->lo, ax->hi, X0, X1));
        fill_rect(c, gx, L.y0, gx + 1, L.y1, GRID);
    }
    for (int i = 0; i < ay->n; ++i) {
        int gy = (int)floor(map(ay->at[i], ay->lo, ay->hi, Y0, Y1));
        fill_rect(c, L.x0, gy, L.x1, gy + 1, GRID);
    }

    draw_series(c, p, ax, ay, &L);

    /* Frame, ticks and their labels. */
    fill_rect(c, L.x0, L.y0, L.x1, L.y0 + 1, FRAME);
    fill_rect(c, L.x0, L.y1 - 1, L.x1, L.y1, FRAME);
    fill_rect(c, L.x0, L.y0, L.x0 + 1, L.y1, FRAME);
    fill_rect(c, L.x1 - 1, L.y0, L.x1, L.y1, FRAME);
    for (int i = 0; i < ax->n; ++i) {
        int gx = (int)floor(map(ax->at[i], ax->lo, ax->hi, X0, X1));
        fill_rect(c, gx, L.y1, gx + 1, L.y1 + tick, FRAME);
    }
    /* An x label that would run into one already drawn is left out (its tick stays); on a log
     * axis the decades go first, so "0.001 0.002" close together keeps the "0.001". */
    int drawn[MAX_TICKS][2], ndrawn = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < ax->n; ++i) {
            int decade = ax->step == 0.0 && fabs(ax->at[i] - round(ax->at[i])) < 1e-9;
            if (decade != (pass == 0))
                continue;
            int gx = (int)floor(map(ax->at[i], ax->lo, ax->hi, X0, X1));
            int tw = text_width(ax->label[i], s), lx = gx - tw / 2, clear = 1;
            for (int k = 0; k < ndrawn && clear; ++k)
                clear = lx + tw + 3 * s <= drawn[k][0] || lx >= drawn[k][1] + 3 * s;
            if (!clear)
                continue;
            drawn[ndrawn][0] = lx;
            drawn[ndrawn][1] = lx + tw;
            ndrawn++;
            draw_text(c, ax->label[i], lx, L.y1 + tick + 2 * s, s, INK, 0);
        }
    }
    for (int i = 0; i < ay->n; ++i) {
        int gy = (int)floor(map(ay->at[i], ay->lo, ay->hi, Y0, Y1));
        fill_rect(c, L.x0 - tick, gy, L.x0, gy + 1, FRAME);
        int tw = text_width(ay->label[i], s);
        draw_text(c, ay->label[i], L.x0 - tick - 2 * s - tw, gy - (7 * s) / 2, s, INK, 0);
    }

    /* Axis labels centred on the area, the title on the image. */
    if (has_text(p->xlabel)) {
        int tw = text_width(p->xlabel, s);
        draw_text(c, p->xlabel, (L.x0 + L.x1 - tw) / 2, c->h - pad - th, s, INK, 0);
    }
    if (has_text(p->ylabel)) {
        int tw = text_width(p->ylabel, s);
        draw_text(c, p->ylabel, pad, (L.y0 + L.y1 + tw) / 2, s, INK, 1);
    }
    if (has_text(p->title)) {
        int tw = text_width(p->title, s);
        int tx = (L.x0 + L.x1 - tw) / 2;
        tx = tx < pad ? pad : tx;
        draw_text(c, p->title, tx, pad, s, INK, 0);
        draw_text(c, p->title, tx + 1, pad, s, INK, 0); /* bold: the title is the heading */
    }

    /* Legend: outside, top-aligned to the area; inside, the corner that hides least data,
     * top-right first on ties. */
    int inset = 4 * s;
    if (legend_outside) {
        draw_legend(c, p, &L, L.x1 + pad, L.y0);
        return 0;
    }
    const int cx[4] = {L.x1 - inset - L.legend_w, L.x0 + inset, L.x1 - inset - L.legend_w,
                       L.x0 + inset};
    const int cy[4] = {L.y0 + inset, L.y0 + inset, L.y1 - inset - L.legend_h,
                       L.y1 - inset - L.legend_h};
    int best = 0;
    long best_cover = LONG_MAX;
    for (int k = 0; k < 4; ++k) {
        long cover = legend_cover(c, cx[k] < 0 ? 0 : cx[k], cy[k] < 0 ? 0 : cy[k], &L);
        if (cover < best_cover) {
            best_cover = cover;
            best = k;
        }
    }
    draw_legend(c, p, &L, cx[best], cy[best]);
    /* A legend bigger than the area it sits in hides the data whatever it covers. */
    if (L.legend_w > (L.x1 - L.x0) / 2 || L.legend_h > (L.y1 - L.y0) * 2 / 3)
        return LONG_MAX;
    return best_cover;
}

/* ---- entry ----------------------------------------------------------------------------- */

static pbd_status check(const pbd_plot *p, const char *path, pbd_error *err)
{
    if (!p->series || p->num_series < 1)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: no series to plot", path);
    for (int i = 0; i < p->num_series; ++i) {
        const pbd_plot_series *s = &p->series[i];
        const char *label = series_label(s);
        if (s->n < 1)
            return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: series '%s' has no points", path,
                                 label);
        if (!s->x || !s->y)
            return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: series '%s' has no data", path, label);
        for (int k = 0; k < s->n; ++k)
            if (!isfinite(s->x[k]) || !isfinite(s->y[k]))
                return pbd_error_set(err, PBD_ERR_ARGUMENT,
                                     "%s: series '%s' point %d is not finite", path, label, k);
    }
    int w = p->width ? p->width : DEFAULT_W, h = p->height ? p->height : DEFAULT_H;
    if (w < MIN_SIZE || w > MAX_SIZE || h < MIN_SIZE || h > MAX_SIZE)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: plot size %dx%d is outside %dx%d to %dx%d",
                             path, w, h, MIN_SIZE, MIN_SIZE, MAX_SIZE, MAX_SIZE);
    return PBD_OK;
}

/* Fills the axes' ranges and ticks from the data. */
static pbd_status axes_from_data(const pbd_plot *p, const char *path, axis *ax, axis *ay,
                                 pbd_error *err)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < p->num_series; ++i) {
        const pbd_plot_series *s = &p->series[i];
        for (int k = 0; k < s->n; ++k) {
            /* A point with no place on a log x axis has none on the plot: it widens neither
             * axis. One with no place on a log y axis still has its x (the gap's place). */
            if (p->log_x && s->x[k] <= 0.0)
                continue;
            double x = p->log_x ? log10(s->x[k]) : s->x[k];
            xlo = fmin(xlo, x);
            xhi = fmax(xhi, x);
            if (p->log_y && s->y[k] <= 0.0)
                continue;
            double y = p->log_y ? log10(s->y[k]) : s->y[k];
            ylo = fmin(ylo, y);
            yhi = fmax(yhi, y);
        }
    }
    if (xlo > xhi)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: no positive x values for a logarithmic axis", path);
    if (ylo > yhi)
        return pbd_error_set(err, PBD_ERR_ARGUMENT,
                             "%s: no positive y values for a logarithmic axis", path);
    axis_range(ax, xlo, xhi, p->log_x);
    axis_range(ay, ylo, yhi, p->log_y);
    if (!isfinite(ax->hi - ax->lo) || !isfinite(ay->hi - ay->lo))
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: data range too large to plot", path);
    if (p->log_x)
        log_ticks(ax);
    else
        linear_ticks(ax);
    if (p->log_y)
        log_ticks(ay);
    else
        linear_ticks(ay);
    return PBD_OK;
}

static void write_to_file(void *context, void *data, int size)
{
    fwrite(data, 1, (size_t)size, (FILE *)context);
}

pbd_status pbd_plot_png(const pbd_plot *p, const char *path, pbd_error *err)
{
    if (!path)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "plot: no output path");
    if (!p)
        return pbd_error_set(err, PBD_ERR_ARGUMENT, "%s: no plot", path);
    pbd_status st = check(p, path, err);
    if (st != PBD_OK)
        return st;
    axis ax, ay;
    canvas c = {
        p->width ? p->width : DEFAULT_W, p->height ? p->height : DEFAULT_H, NULL, 0, 0, 0, 0};
    c.px = malloc((size_t)c.w * (size_t)c.h * 3);
    if (!c.px)
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", path);
    st = axes_from_data(p, path, &ax, &ay, err);
    if (st == PBD_OK) {
        /* A legend hiding more than a sliver of data moves out to the right. */
        long cover = render(&c, p, &ax, &ay, 0);
        if (cover > 40L * c.w / DEFAULT_W)
            render(&c, p, &ax, &ay, 1);

        pbd_output out;
        st = pbd_output_open(&out, path, err);
        if (st == PBD_OK) {
            if (!stbi_write_png_to_func(write_to_file, out.f, c.w, c.h, 3, c.px, c.w * 3)) {
                pbd_output_abort(&out);
                st = pbd_error_set(err, PBD_ERR_MEMORY, "%s: PNG encoding failed", path);
            } else {
                st = pbd_output_commit(&out, err);
            }
        }
    }
    free(c.px);
    return st;
}
