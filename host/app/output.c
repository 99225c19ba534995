#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/output.h"

/* What is at `path`, for the message when it is not a regular file. */
static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISLNK(mode)  ? "a symbolic link"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* The temporary files of the outputs open now, for a signal handler to remove: a slot is
 * set once its name is whole, and cleared before the name is freed. */
enum { PENDING_MAX = 64 };
static char *volatile pending[PENDING_MAX];

static void pending_add(char *tmp)
{
    for (int k = 0; k < PENDING_MAX; ++k)
        if (!pending[k]) {
            pending[k] = tmp;
            return;
        }
}

static void pending_drop(const char *tmp)
{
    for (int k = 0; k < PENDING_MAX; ++k)
        if (pending[k] == tmp)
            pending[k] = NULL;
}

void pbd_output_remove_pending(void)
{
    for (int k = 0; k < PENDING_MAX; ++k) {
        char *tmp = pending[k];
        if (tmp && tmp[0])
            unlink(tmp);
    }
}

pbd_status pbd_output_open(pbd_output *o, const char *path, pbd_error *err)
{
    memset(o, 0, sizeof *o);
    /* Only a regular file (or a new path) is ever replaced: renaming over a device, a FIFO
     * or a symbolic link would put a regular file in its place. */
    struct stat st;
    int exists = lstat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return pbd_error_set(err, PBD_ERR_IO,
                             "%s: found %s, expected a regular file or a new path to write", path,
                             file_kind(st.st_mode));
    size_t n = strlen(path) + 32;
    o->path = calloc(n, 1);
    o->tmp = calloc(n, 1); /* empty until made: pbd_output_abort removes no garbage name */
    if (!o->path || !o->tmp) {
        pbd_output_abort(o);
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", path);
    }
    snprintf(o->path, n, "%s", path);
    /* A temporary name of its own (mkstemp), so two outputs never share one. The stop
     * signals wait until the registry holds it: one between the two would leave the file. */
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    sigaddset(&stops, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &stops, &old);
    int fd = mkstemp(o->tmp), made_errno = errno;
    if (fd >= 0)
        pending_add(o->tmp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        o->tmp[0] = '\0';
        pbd_output_abort(o);
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot write: %s", path, strerror(made_errno));
    }
    /* mkstemp makes the file private (0600); the output gets the mode of the file it
     * replaces (one its user narrowed stays narrow), or the usual one. */
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = exists ? st.st_mode & 0777 : 0666 & ~mask;
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        if (!o->f)
            close(fd);
        pbd_output_abort(o);
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return PBD_OK;
}

static pbd_status commit(pbd_output *o, int sync, pbd_error *err)
{
    errno = 0;
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno ? errno : EIO; /* ferror alone: an earlier write failed */
    if (!bad && sync && fsync(fileno(o->f)) != 0 && errno != EINVAL) {
        bad = 1;
        e = errno;
    }
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) != 0) {
        bad = 1;
        e = errno;
    }
    pbd_status st = PBD_OK;
    if (bad)
        st = pbd_error_set(err, PBD_ERR_IO, "%s: write failed: %s", o->path, strerror(e));
    else
        o->tmp[0] = '\0';
    pbd_output_abort(o);
    return st;
}

pbd_status pbd_output_commit(pbd_output *o, pbd_error *err)
{
    /* On disk before the rename, so that a crash leaves the old file or the new, whole. */
    return commit(o, 1, err);
}

pbd_status pbd_output_commit_unsynced(pbd_output *o, pbd_error *err)
{
    return commit(o, 0, err);
}

pbd_status pbd_output_sync_path(const char *path, pbd_error *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return pbd_error_set(err, PBD_ERR_IO, "%s: sync failed: %s", path, strerror(e));
    }
    close(fd);
    return PBD_OK;
}

void pbd_output_abort(pbd_output *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp && o->tmp[0])
        remove(o->tmp);
    if (o->tmp)
        pending_drop(o->tmp);
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

void pbd_stats_write_header(FILE *f)
{
    fputs("step,time,body,mass,com_x,com_y,com_z,p_x,p_y,p_z,l_x,l_y,l_z,kinetic_energy,"
          "max_constraint_error\n",
          f);
}

void pbd_stats_write_rows(FILE *f, long step, double time, const pbd_body_stats *s, int n)
{
    /* %.17g: doubles round-trip exactly, so two runs' files compare bit for bit. */
    for (int b = 0; b < n; ++b) {
        const double q[] = {s[b].mass, s[b].com[0], s[b].com[1],         s[b].com[2],
                            s[b].p[0], s[b].p[1],   s[b].p[2],           s[b].l[0],
                            s[b].l[1], s[b].l[2],   s[b].kinetic_energy, s[b].max_constraint_error};
        fprintf(f, "%ld,%.17g,%d", step, time, b);
        for (size_t k = 0; k < sizeof q / sizeof q[0]; ++k)
            fprintf(f, ",%.17g", q[k]);
        fputc('\n', f);
    }
}

void pbd_dump_write(FILE *f, const pbd_float4 *x, const pbd_float4 *v, int n)
{
    for (int i = 0; i < n; ++i)
        fprintf(f, "%.9g %.9g %.9g %.9g %.9g %.9g\n", (double)x[i].x, (double)x[i].y,
                (double)x[i].z, (double)v[i].x, (double)v[i].y, (double)v[i].z);
}

pbd_status pbd_read_file(const char *path, size_t max, const char *what, void **data, size_t *size,
                         pbd_error *err)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: found a directory, expected a file",
                             path);
    }
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max) {
        fclose(f);
        return pbd_error_set(err, PBD_ERR_IO,
                             "%s: found a file of %ju bytes, expected %s (%zu bytes)", path,
                             (uintmax_t)st.st_size, what, max);
    }
    unsigned char *buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory (%zu bytes)", path, max);
    }
    size_t n = fread(buf, 1, max + 1, f);
    int read_error = ferror(f) ? errno : 0;
    fclose(f);
    if (read_error) {
        free(buf);
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: %s", path, strerror(read_error));
    }
    if (n > max) {
        free(buf);
        return pbd_error_set(err, PBD_ERR_IO,
                             "%s: found more than %zu bytes, expected %s (%zu bytes)", path, max,
                             what, max);
    }
    *data = buf;
    *size = n;
    return PBD_OK;
}

int pbd_state_first_bad(const pbd_float4 *x, const pbd_float4 *v, int from, int to)
{
    for (int i = from; i < to; ++i) {
        float q[6] = {x[i].x, x[i].y, x[i].z, v[i].x, v[i].y, v[i].z};
        int off = 0;
        for (int c = 0; c < 6; ++c)
            off |= !(fabsf(q[c]) <= PBD_MAX_COORD);
        if (off)
            return i;
    }
    return -1;
}
