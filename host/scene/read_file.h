/* Reading a whole text file with a size cap (private to the library): the scene loader and
 * the mesh loaders read their files through it, so both refuse the same sizes the same way. */
#ifndef PBD_READ_FILE_H
#define PBD_READ_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "pbd.h"

/* The largest file read: 256 MiB, far beyond any scene the particle limit allows to be
 * written out by hand (and beyond a mesh of the most particles a scene may have, at about
 * 40 bytes a vertex), and refused before it is read. */
#define PBD_MAX_FILE_BYTES ((uintmax_t)256 << 20)

/* Reads `path` into *text (malloc'd, NUL-terminated; the caller frees it) and *length (the
 * bytes read, which may hold NUL bytes of their own). A regular file larger than the cap is
 * refused before it is read, a stream with no size after the cap. `what` names the kind of
 * file in the size message ("a scene"); with `regular_only` anything but a regular file
 * (a FIFO, a device) is refused before it is opened, so that opening it cannot block.
 * PBD_ERR_IO when the file cannot be read, `too_big` (a status) when it is too large,
 * PBD_ERR_MEMORY. */
pbd_status pbd_text_file_read(const char *path, const char *what, int regular_only,
                              pbd_status too_big, char **text, size_t *length, pbd_error *err);

#endif
