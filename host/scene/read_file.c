/* Whole text files, read with a size cap. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scene/read_file.h"

pbd_status pbd_text_file_read(const char *path, const char *what, int regular_only,
                              pbd_status too_big, char **text_out, size_t *length, pbd_error *err)
{
    struct stat fst;
    *text_out = NULL;
    *length = 0;
    if (regular_only && stat(path, &fst) == 0 && !S_ISREG(fst.st_mode))
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: found %s, expected a regular file",
                             path, S_ISDIR(fst.st_mode) ? "a directory" : "a special file");
    FILE *f = fopen(path, "rb");
    if (!f)
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    /* A file's size is checked before it is read, and a stream with no size (a device, a
     * pipe) is read no further than the limit. */
    if (fstat(fileno(f), &fst) == 0 && S_ISREG(fst.st_mode) &&
        (uintmax_t)fst.st_size > PBD_MAX_FILE_BYTES) {
        fclose(f);
        return pbd_error_set(err, too_big,
                             "%s: found a file of %ju bytes, expected %s of at most %ju bytes",
                             path, (uintmax_t)fst.st_size, what, (uintmax_t)PBD_MAX_FILE_BYTES);
    }
    size_t len = 0, cap = 4096;
    char *text = malloc(cap);
    while (text) {
        len += fread(text + len, 1, cap - 1 - len, f);
        if (len < cap - 1)
            break;
        if (len > PBD_MAX_FILE_BYTES) {
            free(text);
            fclose(f);
            return pbd_error_set(
                err, too_big, "%s: found more than %ju bytes, expected %s of at most %ju bytes",
                path, (uintmax_t)PBD_MAX_FILE_BYTES, what, (uintmax_t)PBD_MAX_FILE_BYTES);
        }
        char *more = realloc(text, cap * 2);
        if (!more)
            free(text);
        text = more;
        cap *= 2;
    }
    int read_error = ferror(f) ? errno : 0;
    fclose(f);
    if (!text)
        return pbd_error_set(err, PBD_ERR_MEMORY, "%s: out of memory", path);
    if (read_error) {
        free(text);
        return pbd_error_set(err, PBD_ERR_IO, "%s: cannot read: %s", path, strerror(read_error));
    }
    text[len] = '\0';
    *text_out = text;
    *length = len;
    return PBD_OK;
}
