/* The pbd command line: run, bench, devices. The only file that prints usage or exits. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/bench.h"
#include "app/experiments.h"
#include "app/export.h"
#include "app/output.h"
#include "app/plot.h"
#include "pbd.h"
#ifdef PBD_HAVE_VIEW
#include "view/view.h"
#endif

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: pbd run SCENE [options]      simulate a scene and print a summary\n"
    "       pbd bench SCENE [options]    time a scene: ms per step, per-kernel breakdown\n"
    "       pbd bench --suite NAME       time a suite (standard, quick, contacts, types, soak):\n"
    "                                    a table, and --csv/--json/--plot files (standard and\n"
    "                                    quick: both backends and solvers)\n"
    "       pbd view SCENE [options]     the scene in a window (h: keys and mouse)\n"
    "       pbd devices                  list OpenCL platforms and devices\n"
    "       pbd experiments OUTDIR       the paper's experiments: CSV, table and PNG plots\n"
    "       pbd plot STATS.csv OUT.png|OUT.pdf  kinetic energy, |P| and |L| per body over time\n"
    "                                    from a --stats file\n"
    "       pbd --help | -h | help       this text;  pbd --version  the version\n"
    "\n"
    "options (override the scene's values):\n"
    "  --frames N          frames to run, 1 to 1e8 (pbd run; default: the scene's, else 300)\n"
    "  --dt S              frame time step in seconds\n"
    "  --substeps S        substeps per frame\n"
    "  --iterations K      projection iterations per substep\n"
    "  --solver gs|jacobi  coloured Gauss-Seidel or deterministic Jacobi (Jacobi: the\n"
    "                      distance constraints; other types are coloured either way)\n"
    "  --momentum on|off   global momentum preservation (default on; bodies with pinned\n"
    "                      particles are never corrected)\n"
    "  --damping none|point|rigid  damping model (point: v *= 1-k; rigid: Mueller 2007)\n"
    "  --damping-k K       damping fraction per substep, in [0, 1] (both: every body's,\n"
    "                      the bodies' own damping too)\n"
    "  --velocity-update first_order|bdf2\n"
    "  --backend cl|cpu    OpenCL device (default) or the CPU reference\n"
    "  --sums tree|lanes   CPU reference: add the per-body sums (and colour large element\n"
    "                      meshes) in the order of GPUs (tree, default) or of CPU OpenCL\n"
    "                      devices (lanes), to match one bit for bit\n"
    "  --variant auto|gpu|cpu  the kernels a device runs: by device type (auto), the GPU\n"
    "                      kernels or the CPU-device kernels, on any device\n"
    "  --float-sums        compensated float per-body sums on the device, as where it has\n"
    "                      no fp64\n"
    "  --device SPEC       P:D, cpu, gpu or a name substring (env PBD_DEVICE)\n"
    "  --kernel-dir DIR    read the kernel sources from DIR instead of the built-in copy\n"
    "  --stats FILE        write per-body statistics (CSV) every --stats-every frames\n"
    "  --stats-every N     default 1\n"
    "  --dump FILE         write the final positions and velocities, one particle a line\n"
    "  --hash              print \"hash FRAME HEX\" after every frame: a 64-bit hash of every\n"
    "                      position and velocity (two runs agree bit for bit: equal hashes)\n"
    "  --hash-every N      the same every N frames\n"
    "  --export DIR        write the first frame (0, or a loaded checkpoint's) and every\n"
    "                      --export-every frames to DIR (created if missing) for Blender,\n"
    "                      ParaView, MeshLab: needs --format\n"
    "  --format obj|ply|vtk|pc2  OBJ or binary PLY per frame, VTK .vtu per frame and\n"
    "                      series.pvd, or a Blender point cache positions.pc2 (docs/exports.md)\n"
    "  --export-every N    default 1\n"
    "  --save-state FILE   write a checkpoint after the last frame\n"
    "  --load-state FILE   continue from a checkpoint of the same scene and options: --frames\n"
    "                      more frames, numbered from the scene's start\n"
    "  --quiet             no progress or summary\n"
    "bench only:\n"
    "  --runs R            timed runs (default 5); the median is reported\n"
    "  --bench-frames N    frames per timed run (default: about 0.25 s of steps)\n"
    "  --suite NAME        standard (cloth 64^2..1024^2, boxes 1e3..1e5, shipped scenes),\n"
    "                      quick, contacts (piles of soft cubes), types (each constraint\n"
    "                      type's device time per particle touched against the distance\n"
    "                      constraint's, in --runs rounds of --bench-frames frames, default\n"
    "                      10; --csv only), or soak (100,000 frames of the spinning box and\n"
    "                      the cloth, --bench-frames to change: finite state, flat memory,\n"
    "                      drift)\n"
    "  --scenes DIR        the shipped scenes a suite times (default: this build's scenes/)\n"
    "  --csv FILE, --json FILE  the measurements as CSV / JSON\n"
    "  --plot FILE         ms per step against particles for the cloth sweep (.png or .pdf)\n"
    "view only:\n"
    "  --frames N --screenshot FILE.png  render after N frames, write a PNG, exit (no window\n"
    "                      shown: works under xvfb-run)\n"
    "  --frames N --bench  print fps and the split of a frame (simulation, transfer, drawing)\n"
    "  --compare momentum  the scene twice side by side, with and without the correction\n"
    "  --frames N --drag P:X,Y,Z  pull particle P toward (X, Y, Z) as the mouse does, and say\n"
    "                      how far it got and whether the body's tracked momentum held\n"
    "  --verify            read each frame's vertex buffer back from GL and compare it with\n"
    "                      the solver's positions\n"
    "  --read-back         read positions back and upload them, even where the device\n"
    "                      could share the vertex buffers (cl_khr_gl_sharing)\n"
    "  --size WxH          window or picture size in pixels, each 64 to 8192 (default\n"
    "                      1280x720)\n"
    "experiments only:\n"
    "  --scenes DIR        the shipped scenes to measure (default: this build's scenes/)\n"
    "  --quick             shorter runs (a smoke test, not the paper's lengths)\n";

typedef struct options {
    const char *command;
    const char *scene;
    long frames;
    double dt;
    long substeps;
    long iterations;
    int solver;          /* -1: the scene's (likewise below) */
    int momentum;        /* -1, 0 or 1 */
    int damping;         /* -1 or a pbd_damping_kind */
    double damping_k;    /* < 0: the scene's */
    int velocity_update; /* -1 or a pbd_velocity_update */
    pbd_solver_desc desc;
    const char *sums; /* --sums as given, or NULL */
    const char *stats;
    long stats_every;
    const char *dump;
    const char *export_dir; /* --export DIR, or NULL */
    int export_format;      /* -1 or a pbd_export_format */
    long export_every;
    long hash_every; /* --hash: print the state's hash every this many frames; 0: never */
    const char *save_state;
    const char *load_state;
    const char *screenshot; /* pbd view */
    int view_bench;
    int view_verify;
    int view_read_back;
    long drag_particle; /* -1: none */
    float drag_target[3];
    int compare_momentum;
    long width, height;
    int quiet;
    long runs;
    long bench_frames;
    const char *scenes_dir;
    int quick;
    const char *suite;
    const char *csv;
    const char *json;
    const char *plot;
    const char *plot_out;            /* pbd plot's second argument */
    int num_options;                 /* options given (pbd plot takes none) */
    int hash_flag, hash_every_given; /* --hash and --hash-every were given */
} options;

/* The signal that asked the run to stop (SIGINT, SIGTERM, SIGHUP), or 0. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

/* The thread that makes the outputs' temporary files (main's). */
static pthread_t main_thread;

/* Other commands than run: remove the outputs' temporary files, then die of the signal. On
 * the main thread only, where making a temporary file and registering it blocks the signal
 * (pbd_output_open): another thread (an OpenCL runtime's) passes it on. */
static void on_fatal_signal(int sig)
{
    if (!pthread_equal(pthread_self(), main_thread)) {
        pthread_kill(main_thread, sig);
        return;
    }
    pbd_output_remove_pending();
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns (the signal is blocked in it) */
}

/* How a run stopped by `sig` is reported. */
static const char *stopped_by(int sig)
{
    return sig == SIGINT    ? "interrupted (SIGINT)"
           : sig == SIGTERM ? "terminated (SIGTERM)"
           : sig == SIGPIPE ? "its output pipe closed (SIGPIPE)"
                            : "hung up (SIGHUP)";
}

/* The signals that stop a command, and whether each was ignored when pbd started (nohup
 * ignores SIGHUP): those stay ignored. */
static const int stop_signals[4] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
static int stop_ignored[4] = {-1, -1, -1, -1};

/* Handles SIGINT, SIGTERM, SIGHUP and SIGPIPE with sigaction: with `stop` (pbd run) by noting
 * the signal for the run to stop at the next frame (not one-shot: a second Ctrl-C is noted
 * again, not fatal), else by removing the outputs' temporary files and dying of it. Called
 * before the device opens and again after, since an OpenCL implementation may install
 * handlers of its own when it starts (PoCL's LLVM does). */
static void catch_signals(int stop)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop ? on_signal : on_fatal_signal;
    /* A thread that passes the signal on goes on undisturbed; a run's waits (a FIFO scene)
     * are to be cut short by it. */
    sa.sa_flags = stop ? 0 : SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 4; ++k) {
        if (stop_ignored[k] < 0)
            stop_ignored[k] =
                sigaction(stop_signals[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN;
        if (!stop_ignored[k])
            sigaction(stop_signals[k], &sa, NULL);
    }
    /* A file size limit (ulimit -f) fails the write, which is reported, instead of killing
     * the process with a core dump. */
    signal(SIGXFSZ, SIG_IGN);
}

/* The folder of `path` in dir ("." where it names none, "/" the root); returns its last
 * component, or NULL where the folder does not fit. */
static const char *split_path(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) >= size)
        return NULL;
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == path)
        snprintf(dir, size, "/");
    else
        snprintf(dir, size, "%.*s", (int)(slash - path), path);
    return slash ? slash + 1 : path;
}

/* The folder of `path` resolved (realpath) and its last component, in out; 0 where the
 * folder does not resolve. */
static int resolved_path(const char *path, char *out, size_t size)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = split_path(path, dir, sizeof dir);
    if (!base || !realpath(dir, real))
        return 0;
    return snprintf(out, size, "%s/%s", real, base) < (int)size;
}

/* Whether a and b name one file: the same path, the same existing file, or the same name in
 * the same folder (a file not made yet, spelled two ways: out.csv and ./out.csv). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0)
        return 1;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea || eb)
        return 0;
    char ra[PATH_MAX + 1], rb[PATH_MAX + 1];
    return resolved_path(a, ra, sizeof ra) && resolved_path(b, rb, sizeof rb) &&
           strcmp(ra, rb) == 0;
}

/* Whether an export of `format` into `dir` writes the file at `path`: a frame file
 * (frame_DIGITS.ext, six digits or more), series.pvd or positions.pc2 in that folder. */
static int export_writes(const char *dir, int format, const char *path)
{
    char folder[PATH_MAX];
    const char *base = split_path(path, folder, sizeof folder);
    if (!base || !same_file(folder, dir))
        return 0;
    if ((format == PBD_EXPORT_VTK && strcmp(base, "series.pvd") == 0) ||
        (format == PBD_EXPORT_PC2 && strcmp(base, "positions.pc2") == 0))
        return 1;
    const char *ext = format == PBD_EXPORT_PLY   ? ".ply"
                      : format == PBD_EXPORT_VTK ? ".vtu"
                                                 : ".obj";
    size_t n = strlen(base), digits = 0;
    if (n < 6 + 6 + 4 || strncmp(base, "frame_", 6) != 0 || strcmp(base + n - 4, ext) != 0)
        return 0;
    for (size_t k = 6; k < n - 4; ++k)
        digits += base[k] >= '0' && base[k] <= '9';
    return digits == n - 10;
}

/* Prints "pbd: MESSAGE" and where to find the usage; returns the usage exit code. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pbd: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (run 'pbd --help' for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "pbd: %s: found '%s', expected an integer in [%ld, %ld]\n", opt, s, lo, hi);
        return EXIT_USAGE;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* The values are stored as floats: one that rounds onto the open bound is out of range. */
    if (errno || end == s || *end || !isfinite(v) || v <= lo || v > hi || (float)v <= lo ||
        (float)v > hi) {
        fprintf(stderr, "pbd: %s: found '%s', expected a number in (%g, %g]\n", opt, s, lo, hi);
        return EXIT_USAGE;
    }
    *out = v;
    return 0;
}

/* Index of s in the NULL-terminated list, or -1. */
static int pick(const char *s, const char *const *names)
{
    for (int k = 0; names[k]; ++k)
        if (strcmp(s, names[k]) == 0)
            return k;
    return -1;
}

/* The options that belong to some commands only; any other command refuses them rather than
 * ignore them. */
static const struct {
    const char *option, *commands; /* commands: space-separated, each followed by a space */
} option_scope[] = {
    {"--stats", "run "},
    {"--stats-every", "run "},
    {"--dump", "run "},
    {"--export", "run "},
    {"--format", "run "},
    {"--export-every", "run "},
    {"--hash", "run "},
    {"--hash-every", "run "},
    {"--save-state", "run "},
    {"--load-state", "run "},
    {"--quiet", "run "},
    {"--runs", "bench "},
    {"--bench-frames", "bench "},
    {"--suite", "bench "},
    {"--csv", "bench "},
    {"--json", "bench "},
    {"--plot", "bench "},
    {"--scenes", "bench experiments "},
    {"--quick", "experiments "},
    {"--screenshot", "view "},
    {"--bench", "view "},
    {"--compare", "view "},
    {"--drag", "view "},
    {"--verify", "view "},
    {"--read-back", "view "},
    {"--size", "view "},
    /* the scene's settings: pbd bench and experiments time or run scenes of their own */
    {"--frames", "run view "},
    {"--dt", "run view bench "},
    {"--substeps", "run view bench "},
    {"--iterations", "run view bench "},
    {"--solver", "run view bench "},
    {"--momentum", "run view bench "},
    {"--damping", "run view bench "},
    {"--damping-k", "run view bench "},
    {"--velocity-update", "run view bench "},
    /* the device */
    {"--backend", "run view bench experiments "},
    {"--sums", "run view bench experiments "},
    {"--variant", "run view bench experiments "},
    {"--float-sums", "run view bench experiments "},
    {"--device", "run view bench experiments "},
    {"--kernel-dir", "run view bench experiments "},
};

/* 0 where `command` takes option `a` (or `a` is not scoped), else the usage error. */
static int check_scope(const char *command, const char *a)
{
    for (size_t k = 0; k < sizeof option_scope / sizeof option_scope[0]; ++k) {
        if (strcmp(a, option_scope[k].option) != 0)
            continue;
        const char *c = option_scope[k].commands;
        size_t n = strlen(command);
        for (const char *p = strstr(c, command); p; p = strstr(p + 1, command))
            if ((p == c || p[-1] == ' ') && p[n] == ' ')
                return 0;
        /* "run view bench " -> "pbd run, view or bench" */
        char list[96] = "pbd ";
        size_t len = strlen(list);
        for (const char *p = c; *p && len + 6 < sizeof list; ++p) {
            int last_space = *p == ' ' && !strchr(p + 1, ' ');
            if (*p != ' ') {
                list[len++] = *p;
            } else if (!last_space) {
                const char *next = strchr(p + 1, ' ');
                const char *sep = next && !strchr(next + 1, ' ') ? " or " : ", ";
                memcpy(list + len, sep, strlen(sep));
                len += strlen(sep);
            }
        }
        list[len] = '\0';
        return usage_error("%s: an option of %s, not of pbd %s", a, list, command);
    }
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->solver = -1;
    o->momentum = -1;
    o->damping = -1;
    o->damping_k = -1.0;
    o->velocity_update = -1;
    o->drag_particle = -1;
    o->stats_every = 0; /* 0: not given (1 after the checks) */
    o->export_format = -1;
    o->export_every = 0;
    o->runs = 5;
    if (argc < 2)
        return usage_error("missing command");
    if (argv[1][0] == '-')
        return usage_error("%s: found before the command, expected pbd COMMAND [options]", argv[1]);
    o->command = argv[1];
    const char *seen[64];
    int num_seen = 0;
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = check_scope(o->command, a);
        if (rc)
            return rc;
        /* An option given twice is a mistake (which one was meant?), not the last one wins.
         * (Values are skipped below, so each `a` here is an option or an argument.) */
        if (a[0] == '-' && a[1] == '-') {
            for (int j = 0; j < num_seen; ++j)
                if (strcmp(seen[j], a) == 0)
                    return usage_error("%s: given twice, expected it once", a);
            if (num_seen < (int)(sizeof seen / sizeof seen[0]))
                seen[num_seen++] = a;
        }
#define NEEDS_VALUE                                                                                \
    if (!val)                                                                                      \
        return usage_error("%s: missing value", a);                                                \
    ++i
        if (strcmp(a, "--frames") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 100000000, &o->frames);
        } else if (strcmp(a, "--dt") == 0) {
            NEEDS_VALUE;
            rc = parse_double(a, val, PBD_MIN_SUBSTEP, 10.0, &o->dt);
        } else if (strcmp(a, "--substeps") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 1000, &o->substeps);
        } else if (strcmp(a, "--iterations") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 10000, &o->iterations);
        } else if (strcmp(a, "--solver") == 0) {
            NEEDS_VALUE;
            if (strcmp(val, "gs") == 0)
                o->solver = PBD_SOLVER_GS;
            else if (strcmp(val, "jacobi") == 0)
                o->solver = PBD_SOLVER_JACOBI;
            else
                return usage_error("--solver: found '%s', expected gs or jacobi", val);
        } else if (strcmp(a, "--momentum") == 0) {
            NEEDS_VALUE;
            if ((o->momentum = pick(val, (const char *const[]){"off", "on", NULL})) < 0)
                return usage_error("--momentum: found '%s', expected on or off", val);
        } else if (strcmp(a, "--damping") == 0) {
            NEEDS_VALUE;
            o->damping = pick(val, (const char *const[]){"none", "point", "rigid", NULL});
            if (o->damping < 0)
                return usage_error("--damping: found '%s', expected none, point or rigid", val);
        } else if (strcmp(a, "--damping-k") == 0) {
            NEEDS_VALUE;
            char *end;
            errno = 0;
            o->damping_k = strtod(val, &end);
            if (errno || end == val || *end || !(o->damping_k >= 0.0 && o->damping_k <= 1.0)) {
                fprintf(stderr, "pbd: --damping-k: found '%s', expected a number in [0, 1]\n", val);
                return EXIT_USAGE;
            }
        } else if (strcmp(a, "--velocity-update") == 0) {
            NEEDS_VALUE;
            o->velocity_update = pick(val, (const char *const[]){"first_order", "bdf2", NULL});
            if (o->velocity_update < 0)
                return usage_error("--velocity-update: found '%s', expected first_order or "
                                   "bdf2",
                                   val);
        } else if (strcmp(a, "--backend") == 0) {
            NEEDS_VALUE;
            if (strcmp(val, "cl") == 0)
                o->desc.backend = PBD_BACKEND_CL;
            else if (strcmp(val, "cpu") == 0)
                o->desc.backend = PBD_BACKEND_CPU;
            else
                return usage_error("--backend: found '%s', expected cl or cpu", val);
        } else if (strcmp(a, "--sums") == 0) {
            NEEDS_VALUE;
            int k = pick(val, (const char *const[]){"tree", "lanes", NULL});
            if (k < 0)
                return usage_error("--sums: found '%s', expected tree or lanes", val);
            o->desc.sums = k == 1 ? PBD_SUMS_LANES : PBD_SUMS_TREE;
            o->sums = val;
        } else if (strcmp(a, "--variant") == 0) {
            NEEDS_VALUE;
            int k = pick(val, (const char *const[]){"auto", "gpu", "cpu", NULL});
            if (k < 0)
                return usage_error("--variant: found '%s', expected auto, gpu or cpu", val);
            o->desc.variant = (pbd_variant)k;
        } else if (strcmp(a, "--float-sums") == 0) {
            o->desc.float_sums = 1;
        } else if (strcmp(a, "--device") == 0) {
            NEEDS_VALUE;
            o->desc.device = val;
        } else if (strcmp(a, "--kernel-dir") == 0) {
            NEEDS_VALUE;
            o->desc.kernel_dir = val;
        } else if (strcmp(a, "--stats") == 0) {
            NEEDS_VALUE;
            o->stats = val;
        } else if (strcmp(a, "--stats-every") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 100000000, &o->stats_every);
        } else if (strcmp(a, "--export") == 0) {
            NEEDS_VALUE;
            o->export_dir = val;
        } else if (strcmp(a, "--format") == 0) {
            NEEDS_VALUE;
            if ((o->export_format = pbd_export_format_parse(val)) < 0)
                return usage_error("--format: found '%s', expected obj, ply, vtk or pc2", val);
        } else if (strcmp(a, "--export-every") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 100000000, &o->export_every);
        } else if (strcmp(a, "--hash") == 0) {
            o->hash_every = o->hash_every ? o->hash_every : 1;
            o->hash_flag = 1;
        } else if (strcmp(a, "--hash-every") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 100000000, &o->hash_every);
            o->hash_every_given = 1;
        } else if (strcmp(a, "--screenshot") == 0) {
            NEEDS_VALUE;
            o->screenshot = val;
        } else if (strcmp(a, "--bench") == 0) {
            o->view_bench = 1;
        } else if (strcmp(a, "--verify") == 0) {
            o->view_verify = 1;
        } else if (strcmp(a, "--read-back") == 0) {
            o->view_read_back = 1;
        } else if (strcmp(a, "--drag") == 0) {
            NEEDS_VALUE;
            char end = 0, *colon = NULL;
            /* The index by strtol, whose overflow is seen (sscanf's %ld clamps it). */
            errno = 0;
            o->drag_particle = strtol(val, &colon, 10);
            if (colon == val || *colon != ':' || errno == ERANGE || o->drag_particle > INT_MAX ||
                sscanf(colon + 1, "%f,%f,%f%c", &o->drag_target[0], &o->drag_target[1],
                       &o->drag_target[2], &end) != 3 ||
                o->drag_particle < 0 || !isfinite(o->drag_target[0]) ||
                !isfinite(o->drag_target[1]) || !isfinite(o->drag_target[2]) ||
                fabsf(o->drag_target[0]) > PBD_MAX_COORD ||
                fabsf(o->drag_target[1]) > PBD_MAX_COORD ||
                fabsf(o->drag_target[2]) > PBD_MAX_COORD)
                return usage_error("--drag: found '%s', expected PARTICLE:X,Y,Z (a particle "
                                   "index and a point within 1e9 m)",
                                   val);
        } else if (strcmp(a, "--compare") == 0) {
            NEEDS_VALUE;
            if (strcmp(val, "momentum") != 0)
                return usage_error("--compare: found '%s', expected momentum", val);
            o->compare_momentum = 1;
        } else if (strcmp(a, "--size") == 0) {
            NEEDS_VALUE;
            char end = 0;
            if (sscanf(val, "%ldx%ld%c", &o->width, &o->height, &end) != 2 || o->width < 64 ||
                o->height < 64 || o->width > 8192 || o->height > 8192)
                return usage_error("--size: found '%s', expected WIDTHxHEIGHT, each in [64, 8192]",
                                   val);
        } else if (strcmp(a, "--save-state") == 0) {
            NEEDS_VALUE;
            o->save_state = val;
        } else if (strcmp(a, "--load-state") == 0) {
            NEEDS_VALUE;
            o->load_state = val;
        } else if (strcmp(a, "--dump") == 0) {
            NEEDS_VALUE;
            o->dump = val;
        } else if (strcmp(a, "--runs") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 1000, &o->runs);
        } else if (strcmp(a, "--bench-frames") == 0) {
            NEEDS_VALUE;
            rc = parse_long(a, val, 1, 100000000, &o->bench_frames);
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "--suite") == 0) {
            NEEDS_VALUE;
            o->suite = val;
        } else if (strcmp(a, "--csv") == 0) {
            NEEDS_VALUE;
            o->csv = val;
        } else if (strcmp(a, "--json") == 0) {
            NEEDS_VALUE;
            o->json = val;
        } else if (strcmp(a, "--plot") == 0) {
            NEEDS_VALUE;
            o->plot = val;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "--scenes") == 0) {
            NEEDS_VALUE;
            o->scenes_dir = val;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (!o->scene) {
            o->scene = a;
            o->num_options--;
        } else if (strcmp(o->command, "plot") == 0 && !o->plot_out) {
            o->plot_out = a;
            o->num_options--;
        } else {
            return usage_error("unexpected argument '%s' (the scene is '%s')", a, o->scene);
        }
#undef NEEDS_VALUE
        if (rc)
            return rc;
        o->num_options++;
    }
    /* Two outputs never share a path, and no output replaces an input. */
    /* (--save-state may name the checkpoint loaded: it is read whole before any output opens,
     * and replaced whole after the run, so a checkpoint can be refreshed in place.) */
    const char *outs[8] = {o->stats, o->dump,       o->save_state, o->csv,
                           o->json,  o->export_dir, o->plot,       o->screenshot};
    static const char *const out_names[8] = {"--stats", "--dump",   "--save-state", "--csv",
                                             "--json",  "--export", "--plot",       "--screenshot"};
    if (o->load_state && !o->load_state[0])
        return usage_error("--load-state: found an empty path, expected a checkpoint file");
    for (int i = 0; i < 8; ++i) {
        if (outs[i] && !outs[i][0])
            return usage_error("%s: found an empty path, expected a file name", out_names[i]);
        for (int j = i + 1; j < 8; ++j)
            if (outs[i] && outs[j] && same_file(outs[i], outs[j]))
                return usage_error("%s %s: the same file as %s, expected two different paths",
                                   out_names[j], outs[j], out_names[i]);
        if (outs[i] && o->load_state && outs[i] != o->save_state &&
            same_file(outs[i], o->load_state))
            return usage_error("%s %s: the checkpoint given to --load-state, expected another "
                               "path",
                               out_names[i], outs[i]);
        if (outs[i] && o->scene && o->scene[0] != '@' && same_file(outs[i], o->scene))
            return usage_error("%s %s: the scene file, expected another path", out_names[i],
                               outs[i]);
    }
    if (o->stats_every && !o->stats)
        return usage_error("--stats-every: found without --stats FILE");
    if (o->export_dir && o->export_format < 0)
        return usage_error("--export %s: missing --format obj, ply, vtk or pc2", o->export_dir);
    if (o->export_dir) {
        /* nor does the export write over another output, the scene or the checkpoint */
        const char *others[6] = {o->stats,      o->dump,  o->save_state,
                                 o->screenshot, o->scene, o->load_state};
        static const char *const other_names[6] = {"--stats",      "--dump",    "--save-state",
                                                   "--screenshot", "the scene", "--load-state"};
        for (int i = 0; i < 6; ++i)
            if (others[i] && others[i][0] != '@' &&
                export_writes(o->export_dir, o->export_format, others[i]))
                return usage_error("%s %s: a file the export to %s writes, expected a path "
                                   "outside its frame files",
                                   other_names[i], others[i], o->export_dir);
    }
    if (!o->export_dir && (o->export_format >= 0 || o->export_every))
        return usage_error("--%s: found without --export DIR",
                           o->export_format >= 0 ? "format" : "export-every");
    o->stats_every = o->stats_every ? o->stats_every : 1;
    o->export_every = o->export_every ? o->export_every : 1;
    if (o->desc.float_sums && o->desc.backend == PBD_BACKEND_CPU)
        return usage_error("--float-sums: found with --backend cpu, expected the OpenCL backend "
                           "(the CPU reference sums in double)");
    if (o->desc.backend == PBD_BACKEND_CPU &&
        (o->desc.device || o->desc.kernel_dir || o->desc.variant != PBD_VARIANT_AUTO))
        return usage_error("--%s: found with --backend cpu, expected the OpenCL backend (the CPU "
                           "reference runs no kernels on a device)",
                           o->desc.device       ? "device"
                           : o->desc.kernel_dir ? "kernel-dir"
                                                : "variant");
    if (o->hash_every && o->hash_flag && o->hash_every_given)
        return usage_error("--hash: found with --hash-every, expected one of them");
    if (o->sums && o->desc.backend != PBD_BACKEND_CPU)
        return usage_error("--sums %s: found with the OpenCL backend, expected --backend cpu (a "
                           "device adds in its own order)",
                           o->sums);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Prints a library failure: the one-line message, and a build log when there is one. */
static int fail(const pbd_error *err)
{
    fprintf(stderr, "pbd: %s\n", err->message[0] ? err->message : pbd_status_string(err->status));
    if (err->log && err->log[0])
        fprintf(stderr, "--- build log ---\n%s\n--- end of build log ---\n", err->log);
    return EXIT_FAIL;
}

static int cmd_devices(void)
{
    pbd_device_info *list = NULL;
    int n = 0;
    pbd_error err = {0};
    if (pbd_devices_list(&list, &n, &err) != PBD_OK) {
        int rc = fail(&err);
        pbd_error_clear(&err);
        return rc;
    }
    int last_platform = -1;
    for (int k = 0; k < n; ++k) {
        const pbd_device_info *d = &list[k];
        if (d->platform_index != last_platform) {
            printf("platform %d: %s (%s)\n", d->platform_index, d->platform_name,
                   d->platform_version);
            last_platform = d->platform_index;
        }
        printf("  %d:%d  %s [%s]\n", d->platform_index, d->device_index, d->name, d->type);
        printf("       %s, %s, %u compute units, %.0f MiB global memory (%.0f MiB per buffer),"
               " %.0f KiB local memory, max work-group %zu, fp64 %s, cl_khr_gl_sharing %s\n",
               d->version, d->c_version, d->compute_units, (double)d->global_mem / 1048576.0,
               (double)d->max_alloc / 1048576.0, (double)d->local_mem / 1024.0, d->max_work_group,
               d->fp64 ? "yes" : "no", d->gl_sharing ? "yes" : "no");
    }
    free(list);
    return EXIT_OK;
}

static void apply_overrides(const options *o, pbd_scene *s);

/* Loads the scene and applies the command line's overrides. */
static int load_scene(const options *o, pbd_scene *scene, pbd_error *err)
{
    if (!o->scene)
        return usage_error("%s: missing SCENE (a .json file)", o->command);
    pbd_status st = pbd_scene_load(o->scene, scene, err);
    if (st != PBD_OK && interrupted) {
        /* (a scene read from a FIFO waits for its writer; the signal ends the wait) */
        fprintf(stderr, "pbd: %s while the scene loaded; no output files written\n",
                stopped_by(interrupted));
        return 128 + interrupted;
    }
    if (st != PBD_OK)
        return fail(err);
    /* The scene gave a damping_k where a body takes the scene's fraction (a scene's unused
     * damping_k is refused at load). */
    int scene_k = 0;
    for (int b = 0; b < scene->model.num_bodies; ++b)
        scene_k |=
            pbd_body_damping(&scene->model.bodies[b], &scene->config, NULL) != PBD_DAMPING_NONE &&
            scene->model.bodies[b].damping_k < 0.0f;
    apply_overrides(o, scene);
    /* A substep too short because of --dt or --substeps is the command line's mistake. */
    const pbd_config *c = &scene->config;
    if ((o->dt > 0.0 || o->substeps) && !(c->dt / (float)c->substeps >= PBD_MIN_SUBSTEP))
        return usage_error("--%s: gives substeps of %g s (dt %g s in %d), expected at least %g s",
                           o->substeps ? "substeps" : "dt", (double)(c->dt / (float)c->substeps),
                           (double)c->dt, c->substeps, (double)PBD_MIN_SUBSTEP);
    /* A scene's omega under the gs solver, from the scene or --solver, without particle
     * contacts: nothing would use it (the scene refuses it where no solver could). */
    int contacts = 0;
    for (int b = 0; b < scene->model.num_bodies; ++b)
        contacts |= scene->model.bodies[b].radius > 0.0f;
    if (c->solver == PBD_SOLVER_GS && c->omega != 1.0f && !contacts && o->solver < 0) {
        pbd_error_set(err, PBD_ERR_SCENE,
                      "%s: omega: found %g with the gs solver and no particle contacts, expected "
                      "it with \"solver\": \"jacobi\" or --solver jacobi (the Jacobi solve's "
                      "relaxation) or with contacts",
                      o->scene, (double)c->omega);
        return fail(err);
    }
    /* ... where --solver gs made it so, a comparison of the solvers: said, not refused */
    if (c->solver == PBD_SOLVER_GS && c->omega != 1.0f && !contacts)
        fprintf(stderr,
                "pbd: note: %s: omega %g has no effect with --solver gs (no particle "
                "contacts)\n",
                o->scene, (double)c->omega);
    /* --damping-k replaces every body's fraction; with no body damping it would do nothing. */
    int damped = 0;
    for (int b = 0; b < scene->model.num_bodies; ++b)
        damped |=
            pbd_body_damping(&scene->model.bodies[b], &scene->config, NULL) != PBD_DAMPING_NONE;
    if (o->damping_k >= 0.0 && !damped)
        return usage_error("--damping-k: found %g where no body damps (the damping of %s and "
                           "its bodies is none), expected --damping point or rigid too",
                           o->damping_k, o->scene);
    /* --damping without a fraction from anywhere would damp by 0: nothing. */
    for (int b = 0; b < scene->model.num_bodies && o->damping > 0 && o->damping_k < 0.0; ++b)
        if (!scene_k && scene->model.bodies[b].damping_k < 0.0f)
            return usage_error("--damping %s: found without --damping-k, and %s gives no "
                               "damping_k, expected --damping-k K",
                               o->damping == PBD_DAMPING_POINT ? "point" : "rigid", o->scene);
    return EXIT_OK;
}

/* The command line's overrides of a scene's configuration. --damping and --damping-k are the
 * whole run's: they replace the bodies' own too. */
static void apply_overrides(const options *o, pbd_scene *s)
{
    pbd_config *c = &s->config;
    for (int b = 0; b < s->model.num_bodies; ++b) {
        if (o->damping >= 0)
            s->model.bodies[b].damping = -1;
        if (o->damping_k >= 0.0)
            s->model.bodies[b].damping_k = -1.0f;
    }
    if (o->frames)
        c->frames = (int)o->frames;
    if (o->dt > 0.0)
        c->dt = (float)o->dt;
    if (o->substeps)
        c->substeps = (int)o->substeps;
    if (o->iterations)
        c->iterations = (int)o->iterations;
    if (o->solver >= 0)
        c->solver = (pbd_solver_kind)o->solver;
    if (o->momentum >= 0)
        c->momentum = o->momentum;
    if (o->damping >= 0)
        c->damping = (pbd_damping_kind)o->damping;
    if (o->damping_k >= 0.0)
        c->damping_k = (float)o->damping_k;
    if (o->velocity_update >= 0)
        c->velocity_update = (pbd_velocity_update)o->velocity_update;
}

static int write_stats(pbd_solver *s, FILE *f, long step, double time, pbd_body_stats *buf, int nb,
                       pbd_error *err)
{
    if (pbd_solver_stats(s, buf, err) != PBD_OK)
        return fail(err);
    pbd_stats_write_rows(f, step, time, buf, nb);
    return EXIT_OK;
}

/* The NaN guard, after every chunk of frames and before every output (an exported frame
 * is checked by the export, app/export.h): the per-body statistics (one reduction where
 * the state lives). A body whose sums are not finite, or whose root-mean-square speed is
 * beyond PBD_MAX_COORD m/s, stops the run; only then is the state read back, to name the
 * first particle at fault. Returns EXIT_OK or EXIT_FAIL. */
static int guard(pbd_solver *s, const pbd_model *m, long frame, pbd_body_stats *st, int exporting,
                 pbd_error *err)
{
    const char *kept = exporting ? "no output files written but the frames exported before it"
                                 : "no output files written";
    int bad = -1;
    if (pbd_solver_stats(s, st, err) != PBD_OK)
        return fail(err);
    for (int b = 0; b < m->num_bodies && bad < 0; ++b) {
        double sum = st[b].kinetic_energy + st[b].com[0] + st[b].com[1] + st[b].com[2] +
                     st[b].p[0] + st[b].p[1] + st[b].p[2] + st[b].l[0] + st[b].l[1] + st[b].l[2];
        double rms = st[b].mass > 0.0 ? sqrt(2.0 * st[b].kinetic_energy / st[b].mass) : 0.0;
        if (!isfinite(sum) || !(rms <= PBD_MAX_COORD))
            bad = b;
    }
    if (bad < 0)
        return EXIT_OK;
    const pbd_body *b = &m->bodies[bad];
    pbd_float4 *x = malloc((size_t)m->num_particles * sizeof *x);
    pbd_float4 *v = malloc((size_t)m->num_particles * sizeof *v);
    if (x && v && pbd_solver_read(s, x, v, err) == PBD_OK) {
        int i = pbd_state_first_bad(x, v, b->first, b->first + b->count);
        if (i < 0)
            i = b->first;
        fprintf(stderr,
                "pbd: frame %ld: body %d (%s), particle %d: position (%g, %g, %g) m, velocity "
                "(%g, %g, %g) m/s: not finite or beyond %g; stopping, %s\n",
                frame, bad, b->name, i - b->first, (double)x[i].x, (double)x[i].y, (double)x[i].z,
                (double)v[i].x, (double)v[i].y, (double)v[i].z, (double)PBD_MAX_COORD, kept);
    } else {
        fprintf(stderr,
                "pbd: frame %ld: body %d (%s): kinetic energy %g J, momentum (%g, %g, %g): not "
                "finite or beyond %g m/s; stopping, %s\n",
                frame, bad, b->name, st[bad].kinetic_energy, st[bad].p[0], st[bad].p[1],
                st[bad].p[2], (double)PBD_MAX_COORD, kept);
    }
    free(x);
    free(v);
    return EXIT_FAIL;
}

static int cmd_run(const options *o)
{
    pbd_scene scene = {0};
    pbd_error err = {0};
    pbd_solver *solver = NULL;
    pbd_output stats = {0}, dump = {0}, save = {0};
    pbd_export *exp = NULL;
    pbd_float4 *ex = NULL, *ev = NULL; /* an exported frame is read into the export's buffers */
    pbd_body_stats *sbuf = NULL;
    pbd_float4 *x = NULL, *v = NULL;
    void *state = NULL;
    size_t state_size = 0;
    catch_signals(1);
    int rc = load_scene(o, &scene, &err);
    if (rc)
        goto done;
    const pbd_model *m = &scene.model;
    const pbd_config *c = &scene.config;
    /* A signal while the device opens can fail its program build (PoCL's compiler is
     * interrupted): that run was stopped, not broken. */
    pbd_solver_desc d = o->desc;
    if (pbd_solver_create(&scene.model, &scene.config, &d, &solver, &err) != PBD_OK) {
        if (interrupted) {
            fprintf(stderr, "pbd: %s while the device opened; no output files written\n",
                    stopped_by(interrupted));
            rc = 128 + interrupted;
        } else {
            /* a refused substeps or dt that the command line gave is named as its option */
            char label[PATH_MAX + 64];
            if (o->substeps && strncmp(err.message, "substeps: ", 10) == 0)
                snprintf(label, sizeof label, "--substeps %ld with %s", o->substeps, o->scene);
            else if (o->dt > 0.0 && strncmp(err.message, "dt: ", 4) == 0)
                snprintf(label, sizeof label, "--dt %g with %s", o->dt, o->scene);
            else
                snprintf(label, sizeof label, "%s", o->scene);
            pbd_cli_name_scene(&err, label);
            rc = fail(&err);
        }
        goto done;
    }
    catch_signals(1); /* again, now that the device is open */
    if (!o->quiet)
        fprintf(stderr, "pbd: device: %s\n", pbd_solver_device_name(solver));
    /* A checkpoint is exactly this solver's state size; a longer file is not read. */
    if (o->load_state &&
        (pbd_read_file(o->load_state, pbd_solver_state_size(solver),
                       "a checkpoint of this scene and options", &state, &state_size,
                       &err) != PBD_OK ||
         pbd_solver_load_state(solver, state, state_size, o->load_state, &err) != PBD_OK)) {
        rc = fail(&err);
        goto done;
    }
    free(state);
    state = NULL;
    /* Frames are numbered from the scene's start, also after a checkpoint. */
    const long first = pbd_solver_substeps(solver) / c->substeps;

    if (o->stats && pbd_output_open(&stats, o->stats, &err) != PBD_OK) {
        rc = fail(&err);
        goto done;
    }
    if (o->dump && pbd_output_open(&dump, o->dump, &err) != PBD_OK) {
        rc = fail(&err);
        goto done;
    }
    if (o->save_state && pbd_output_open(&save, o->save_state, &err) != PBD_OK) {
        rc = fail(&err);
        goto done;
    }
    sbuf = calloc((size_t)m->num_bodies, sizeof *sbuf);
    if (o->dump) {
        x = malloc((size_t)m->num_particles * sizeof *x);
        v = malloc((size_t)m->num_particles * sizeof *v);
    }
    if (!sbuf || (o->dump && (!x || !v))) {
        fprintf(stderr, "pbd: out of memory\n");
        rc = EXIT_FAIL;
        goto done;
    }
    /* Frames first, first + every, ...: frame numbers count from the scene's start. */
    if (o->export_dir &&
        (pbd_export_open(&exp, o->export_dir, (pbd_export_format)o->export_format, m, c->dt, first,
                         o->export_every, first + c->frames, &err) != PBD_OK ||
         pbd_export_buffers(exp, &ex, &ev, &err) != PBD_OK ||
         pbd_solver_read(solver, ex, ev, &err) != PBD_OK ||
         pbd_export_frame(exp, first, ex, ev, &err) != PBD_OK)) {
        rc = fail(&err);
        goto done;
    }
    if (stats.f) {
        pbd_stats_write_header(stats.f);
        if ((rc = write_stats(solver, stats.f, first, (double)first * c->dt, sbuf, m->num_bodies,
                              &err)))
            goto done;
    }

    int tty = isatty(STDERR_FILENO);
    double t_start = now_s(), t_step = 0.0, t_report = t_start + 2.0;
    long done_frames = 0;
    /* Step in chunks up to the next statistics row, waiting between chunks only (never
     * inside a step) so progress and a signal are noticed: chunks of at most about 20 ms of
     * frames, and of one frame where a frame takes longer, so a run stops within one frame
     * or 20 ms of a signal. The first chunk is one frame, to time it. */
    long chunk = 1;
    while (done_frames < c->frames && !interrupted) {
        long n = c->frames - done_frames < chunk ? c->frames - done_frames : chunk;
        if (stats.f) {
            long to_stats = o->stats_every - (first + done_frames) % o->stats_every;
            n = n < to_stats ? n : to_stats;
        }
        if (o->hash_every) {
            long to_hash = o->hash_every - (first + done_frames) % o->hash_every;
            n = n < to_hash ? n : to_hash;
        }
        if (exp) {
            long to_export = o->export_every - done_frames % o->export_every;
            n = n < to_export ? n : to_export;
        }
        double t0 = now_s();
        if (pbd_solver_step(solver, (int)n, &err) != PBD_OK) {
            rc = fail(&err);
            goto done;
        }
        long frame = first + done_frames + n;
        /* An exported frame is read behind the steps and checked (as the guard does) and
         * written on the export's thread, so the loop does not wait for the device then
         * unless a statistics row or a hash needs it: the device steps on while the frame
         * comes back. The export's two slots bound how far the loop runs ahead. */
        int export_now = exp && (done_frames + n) % o->export_every == 0;
        int stats_now = stats.f && frame % o->stats_every == 0;
        int hash_now = o->hash_every && frame % o->hash_every == 0;
        int wait = !export_now || stats_now || hash_now;
        pbd_pending_read *pending = NULL;
        if (export_now && (pbd_export_buffers(exp, &ex, &ev, &err) != PBD_OK ||
                           pbd_solver_read_begin(solver, ex, ev, &pending, &err) != PBD_OK ||
                           pbd_export_queue(exp, frame, pending, &err) != PBD_OK)) {
            rc = fail(&err);
            goto done;
        }
        if (wait && pbd_solver_finish(solver, &err) != PBD_OK) {
            rc = fail(&err);
            goto done;
        }
        double dt_chunk = now_s() - t0;
        t_step += dt_chunk;
        done_frames += n;
        double per_frame = dt_chunk / (double)n;
        chunk = per_frame * 32.0 <= 0.02 ? 32 : per_frame >= 0.02 ? 1 : (long)(0.02 / per_frame);
        if (wait && (rc = guard(solver, m, frame, sbuf, exp != NULL, &err)))
            goto done;
        if (hash_now) {
            uint64_t h = 0;
            if (pbd_solver_state_hash(solver, &h, &err) != PBD_OK) {
                rc = fail(&err);
                goto done;
            }
            printf("hash %ld %016llx\n", frame, (unsigned long long)h);
            /* A closed pipe is a stop (SIGPIPE, noted by now); any other failure an error. */
            if (fflush(stdout) != 0 && !interrupted) {
                if (errno == EPIPE) { /* SIGPIPE ignored from the start: the same stop */
                    interrupted = SIGPIPE;
                } else {
                    fprintf(stderr, "pbd: standard output: write failed: %s; %s\n", strerror(errno),
                            exp ? "no output files written but the frames "
                                  "exported before it"
                                : "no output files written");
                    rc = EXIT_FAIL;
                    goto done;
                }
            }
        }
        /* The guard has just computed this state's statistics. */
        if (stats_now) {
            errno = 0;
            pbd_stats_write_rows(stats.f, frame, (double)frame * c->dt, sbuf, m->num_bodies);
            /* A full disk stops the run when the rows stop fitting, not after it. */
            if (ferror(stats.f)) {
                fprintf(stderr, "pbd: %s: write failed: %s; %s\n", o->stats,
                        strerror(errno ? errno : EIO),
                        exp ? "no output files written but the frames exported before it"
                            : "no output files written");
                rc = EXIT_FAIL;
                goto done;
            }
        }
        double t = now_s();
        if (!o->quiet && t >= t_report) {
            /* frame numbers from the scene's start, as the hash lines and rows number them */
            fprintf(stderr, "%sframe %ld of %ld (%.0f%%), %.3f ms per step%s",
                    tty ? "\r" : "pbd: ", first + done_frames, first + (long)c->frames,
                    100.0 * (double)(first + done_frames) / (double)(first + c->frames),
                    1e3 * t_step / (double)done_frames, tty ? "" : "\n");
            fflush(stderr);
            t_report = t + 1.0;
        }
    }
    if (!o->quiet && tty && t_report > t_start + 2.0)
        fputc('\n', stderr);
    if (interrupted) {
        /* Frames exported so far are complete files: they stay, and finishing the export
         * makes series.pvd or positions.pc2 list exactly them. */
        if (exp && pbd_export_finish(exp, &err) != PBD_OK)
            fail(&err);
        if (exp)
            fprintf(stderr,
                    "pbd: %s after %ld frames; kept the %ld frames exported to %s, no other "
                    "output files written\n",
                    stopped_by(interrupted), done_frames, pbd_export_frames(exp), o->export_dir);
        else
            fprintf(stderr, "pbd: %s after %ld frames; no output files written\n",
                    stopped_by(interrupted), done_frames);
        rc = 128 + interrupted; /* the shell's code for a death by that signal */
        goto done;
    }
    if (exp && pbd_export_finish(exp, &err) != PBD_OK) {
        rc = fail(&err);
        goto done;
    }
    if (dump.f) {
        if (pbd_solver_read(solver, x, v, &err) != PBD_OK) {
            rc = fail(&err);
            goto done;
        }
        pbd_dump_write(dump.f, x, v, m->num_particles);
    }
    if (save.f) {
        if (pbd_solver_save_state(solver, &state, &state_size, &err) != PBD_OK) {
            rc = fail(&err);
            goto done;
        }
        if (fwrite(state, 1, state_size, save.f) != state_size) {
            fprintf(stderr, "pbd: %s: write failed: %s\n", o->save_state, strerror(errno));
            rc = EXIT_FAIL;
            goto done;
        }
    }
    if ((stats.f && pbd_output_commit(&stats, &err) != PBD_OK) ||
        (dump.f && pbd_output_commit(&dump, &err) != PBD_OK) ||
        (save.f && pbd_output_commit(&save, &err) != PBD_OK)) {
        rc = fail(&err);
        goto done;
    }
    if (!o->quiet) {
        printf("scene        %s\n", o->scene);
        if (o->desc.backend == PBD_BACKEND_CL)
            printf("device       %s, %s kernels\n", pbd_solver_device_name(solver),
                   pbd_solver_variant(solver) == PBD_VARIANT_CPU ? "cpu" : "gpu");
        else
            printf("device       %s\n", pbd_solver_device_name(solver));
        printf("particles    %d in %d bod%s\n", m->num_particles, m->num_bodies,
               m->num_bodies == 1 ? "y" : "ies");
        printf("constraints ");
        int types = 0;
        for (int t = 0; t < PBD_CONSTRAINT_COUNT; ++t) {
            int n = 0;
            pbd_model_constraints(m, t, &n);
            int serial = pbd_solver_type_serial(solver, t);
            char one[32] = "";
            int blocks = pbd_solver_type_blocks(solver, t);
            if (pbd_solver_type_one_launch(solver, t))
                snprintf(one, sizeof one, ", in one launch");
            else if (blocks == 1)
                snprintf(one, sizeof one, ", in one block");
            else if (blocks > 1)
                snprintf(one, sizeof one, ", in %d blocks", blocks);
            if (serial)
                printf(" %d %s (%d colours, the last %d serial%s),", n,
                       pbd_constraint_types[t].name, pbd_solver_type_colors(solver, t), serial,
                       one);
            else if (n > 0 || t == PBD_CONSTRAINT_DISTANCE)
                printf(" %d %s (%d colours%s),", n, pbd_constraint_types[t].name,
                       pbd_solver_type_colors(solver, t), one);
            types += n > 0;
        }
        if (types > 1)
            printf(" %d colours in all,", pbd_solver_num_colors(solver));
        int shaped = 0, pressed = 0; /* the body constraints: one a body, no colours */
        for (int b = 0; b < m->num_bodies; ++b) {
            shaped += m->bodies[b].shape_stiffness > 0.0f || m->bodies[b].shape_compliance > 0.0f;
            pressed += m->bodies[b].pressure > 0.0f;
        }
        int clusters = pbd_solver_shape_clusters(solver);
        if (shaped > 0 && clusters > 0)
            printf(" shape matching on %d bod%s (%d clusters),", shaped, shaped == 1 ? "y" : "ies",
                   clusters);
        else if (shaped > 0)
            printf(" shape matching on %d bod%s,", shaped, shaped == 1 ? "y" : "ies");
        if (pressed > 0)
            printf(" pressure on %d bod%s,", pressed, pressed == 1 ? "y" : "ies");
        printf(" %d colliders\n", m->num_colliders);
        printf("solver       %s%s, %d iterations, %d substeps, dt %g s\n",
               c->solver == PBD_SOLVER_GS ? "gauss-seidel" : "jacobi",
               c->solver == PBD_SOLVER_JACOBI && m->num_distance == 0
                   ? " (no distance constraints: the same as gauss-seidel)"
                   : "",
               c->iterations, c->substeps, (double)c->dt);
        static const char *const damping_names[] = {"none", "point", "rigid"};
        int preserved = 0;
        for (int b = 0; b < m->num_bodies; ++b)
            preserved += pbd_body_preserved(&m->bodies[b], c);
        printf("momentum     %s (%d of %d bod%s preserved; a body with pinned particles is held "
               "by the world)\n",
               c->momentum ? "on" : "off", preserved, m->num_bodies,
               m->num_bodies == 1 ? "y" : "ies");
        printf("damping      %s", damping_names[c->damping]);
        if (c->damping != PBD_DAMPING_NONE)
            printf(", k = %g per substep", (double)c->damping_k);
        int own = 0;
        for (int b = 0; b < m->num_bodies; ++b)
            own += m->bodies[b].damping >= 0 || m->bodies[b].damping_k >= 0.0f;
        if (own > 0)
            printf(" (%d bod%s with %s own)", own, own == 1 ? "y" : "ies",
                   own == 1 ? "its" : "their");
        printf("; velocity update %s\n",
               c->velocity_update == PBD_VELOCITY_BDF2 ? "bdf2" : "first order");
        printf("steps        %ld frames (%ld substeps), %ld launches per frame\n", done_frames,
               done_frames * c->substeps, pbd_solver_launches_per_frame(solver));
        if (o->load_state)
            printf("resumed      from %s at frame %ld\n", o->load_state, first);
        if (o->save_state)
            printf("saved        %s at frame %ld (%zu bytes)\n", o->save_state, first + done_frames,
                   state_size);
        if (exp) {
            static const char *const format_names[] = {"obj", "ply", "vtk", "pc2"};
            printf("exported     %ld frames (%s, every %ld) to %s\n", pbd_export_frames(exp),
                   format_names[o->export_format], o->export_every, o->export_dir);
        }
        printf("time         %.3f ms per step, %.2f s in all\n",
               done_frames ? 1e3 * t_step / (double)done_frames : 0.0, now_s() - t_start);
    }
done:
    /* A run stopped by an error keeps the frames exported before it (unless the export
     * itself failed: then finishing does nothing). */
    if (exp && rc != EXIT_OK && pbd_export_finish(exp, &err) != PBD_OK)
        fail(&err);
    pbd_export_free(exp);
    pbd_output_abort(&stats);
    pbd_output_abort(&dump);
    pbd_output_abort(&save);
    free(state);
    free(x);
    free(v);
    free(sbuf);
    pbd_solver_destroy(solver);
    pbd_scene_free(&scene);
    pbd_error_clear(&err);
    return rc;
}

static void tweak_config(const void *ctx, pbd_scene *s)
{
    apply_overrides((const options *)ctx, s);
}

/* Whether each output (NULL: none) can be made where it is asked for, tried before a
 * measurement that may take minutes rather than after it: 0, or the exit status. */
static int outputs_usable(const char *const *paths, int n)
{
    for (int i = 0; i < n; ++i) {
        pbd_output t = {0};
        pbd_error err = {0};
        if (paths[i] && pbd_output_open(&t, paths[i], &err) != PBD_OK) {
            int rc = fail(&err);
            pbd_error_clear(&err);
            return rc;
        }
        pbd_output_abort(&t);
    }
    return 0;
}

static int cmd_bench(const options *o)
{
    const char *scenes = o->scenes_dir ? o->scenes_dir : PBD_DEFAULT_SCENES;
    /* A plot that cannot be drawn is refused before the suite runs, not after. */
    if (o->plot && !pbd_plot_name_ok(o->plot))
        return usage_error("--plot: found '%s', expected a file name ending in .png or .pdf",
                           o->plot);
    if (o->plot && !pbd_plot_available()) {
        fprintf(stderr,
                "pbd: --plot %s: this build draws no plots (PLplot was not found): "
                "install libplplot-dev and plplot-driver-cairo, then configure and build "
                "again\n",
                o->plot);
        return EXIT_FAIL;
    }
    const char *const outs[3] = {o->csv, o->json, o->plot};
    int unusable;
    if (o->suite) {
        if (o->scene)
            return usage_error("bench: give a SCENE or --suite, not both (found '%s')", o->scene);
        if ((unusable = outputs_usable(outs, 3)) != 0)
            return unusable;
        return pbd_cli_bench_suite(o->suite, scenes, &o->desc, (int)o->runs, (int)o->bench_frames,
                                   tweak_config, o, o->csv, o->json, o->plot);
    }
    if (!o->scene)
        return usage_error("bench: missing SCENE (a .json file or @name) or --suite NAME");
    if (o->plot)
        return usage_error("bench: --plot needs --suite (it plots a size sweep)");
    if ((unusable = outputs_usable(outs, 3)) != 0)
        return unusable;
    pbd_bench_row row;
    pbd_error err = {0};
    if (pbd_cli_bench_row(o->scene, &o->desc, -1, (int)o->runs, (int)o->bench_frames, tweak_config,
                          o, &row, &err)) {
        int rc = fail(&err);
        pbd_error_clear(&err);
        return rc;
    }
    fprintf(stderr, "pbd: device: %s\n", row.device);
    return pbd_cli_bench_print(&row, o->csv, o->json);
}

static int cmd_plot(const options *o)
{
    if (!o->scene || !o->plot_out)
        return usage_error("plot: expected STATS.csv OUT.png|OUT.pdf, found %s",
                           o->scene ? "one argument" : "none");
    if (o->num_options > 0)
        return usage_error("plot: takes no options, found %d", o->num_options);
    if (same_file(o->scene, o->plot_out))
        return usage_error("plot: %s: the same file as the statistics, expected two paths",
                           o->plot_out);
    if (!pbd_plot_name_ok(o->plot_out))
        return usage_error("plot: found '%s', expected a file name ending in .png or .pdf",
                           o->plot_out);
    pbd_error err = {0};
    int rc = pbd_plot_stats(o->scene, o->plot_out, &err) == PBD_OK ? EXIT_OK : fail(&err);
    pbd_error_clear(&err);
    return rc;
}

static int cmd_view(const options *o)
{
    if (!o->scene)
        return usage_error("view: missing SCENE (a .json file or @name)");
    int stops = o->screenshot || o->view_bench || o->view_verify || o->drag_particle >= 0;
    if (stops && o->frames <= 0)
        return usage_error("view: --%s needs --frames N (when to stop)", o->screenshot
                                                                             ? "screenshot"
                                                                         : o->view_bench  ? "bench"
                                                                         : o->view_verify ? "verify"
                                                                                          : "drag");
    if (!stops && o->frames > 0)
        return usage_error("view: --frames needs --screenshot, --bench, --verify or --drag (a "
                           "window runs until it is closed)");
    size_t shot_len = o->screenshot ? strlen(o->screenshot) : 0;
    if (o->screenshot && (shot_len < 4 || strcmp(o->screenshot + shot_len - 4, ".png") != 0))
        return usage_error("--screenshot: found '%s', expected a file name ending in .png",
                           o->screenshot);
#ifdef PBD_HAVE_VIEW
    pbd_view_options v = {0};
    v.scene = o->scene;
    v.desc = o->desc;
    v.tweak = tweak_config;
    v.ctx = o;
    v.frames =
        o->screenshot || o->view_bench || o->view_verify || o->drag_particle >= 0 ? o->frames : 0;
    v.screenshot = o->screenshot;
    v.bench = o->view_bench;
    v.compare_momentum = o->compare_momentum;
    v.verify = o->view_verify;
    v.read_back = o->view_read_back;
    v.drag_particle = (int)(o->drag_particle < INT_MAX ? o->drag_particle : INT_MAX);
    memcpy(v.drag_target, o->drag_target, sizeof v.drag_target);
    v.width = (int)o->width;
    v.height = (int)o->height;
    return pbd_cli_view(&v);
#else
    fprintf(stderr, "pbd view: this build has no viewer (GLFW 3.3 or python3-glad was not "
                    "found): install libglfw3-dev and python3-glad, then configure and build "
                    "again\n");
    return EXIT_FAIL;
#endif
}

int main(int argc, char **argv)
{
    main_thread = pthread_self();
    /* --help anywhere (pbd run --help too) prints the usage. */
    for (int k = 1; k < argc; ++k)
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0 ||
            (k == 1 && strcmp(argv[k], "help") == 0)) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        }
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        puts("pbd 0.1.0");
        return EXIT_OK;
    }
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    /* pbd run stops at a frame (cmd_run); the others die of the signal, leaving no
     * temporary file behind. */
    if (strcmp(o.command, "run") != 0)
        catch_signals(0);
    if (strcmp(o.command, "devices") == 0)
        rc = o.scene ? usage_error("devices: takes no arguments, found '%s'", o.scene)
                     : cmd_devices();
    else if (strcmp(o.command, "run") == 0)
        rc = cmd_run(&o);
    else if (strcmp(o.command, "bench") == 0)
        rc = cmd_bench(&o);
    else if (strcmp(o.command, "view") == 0)
        rc = cmd_view(&o);
    else if (strcmp(o.command, "plot") == 0)
        rc = cmd_plot(&o);
    else if (strcmp(o.command, "experiments") == 0)
        rc = !o.scene
                 ? usage_error("experiments: missing OUTDIR (the folder to write to)")
                 : pbd_cli_experiments(o.scene, o.scenes_dir ? o.scenes_dir : PBD_DEFAULT_SCENES,
                                       &o.desc, o.quick);
    else
        return usage_error("unknown command '%s' (expected run, view, bench, devices, "
                           "experiments or plot)",
                           o.command);
    /* What was printed (a summary, hashes, a table) must have reached stdout; a pipe closed
     * before the end (pbd run ... | head) ends it as SIGPIPE would have. */
    errno = 0;
    if (rc == EXIT_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        if (interrupted == SIGPIPE || errno == EPIPE)
            return 128 + SIGPIPE;
        fprintf(stderr, "pbd: standard output: write failed: %s\n", strerror(errno ? errno : EIO));
        return EXIT_FAIL;
    }
    return rc;
}
