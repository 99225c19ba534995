/* `pbd run --export DIR --format obj|ply|vtk|pc2`: the state at frame 0 and every Nth frame
 * as files that Blender, ParaView and MeshLab open (docs/exports.md). Part of the command
 * line: the library writes no files.
 *
 * Every file is written under a temporary name and renamed into place when complete
 * (pbd_output_*), so no stop (a signal, a full disk, a crash) leaves a partial file under a
 * frame's name. Frame files are not synced one by one (a sync costs about as much as
 * writing a frame); pbd_export_finish syncs them all before the run reports success. */
#ifndef PBD_APP_EXPORT_H
#define PBD_APP_EXPORT_H

#include "pbd.h"

typedef enum pbd_export_format {
    PBD_EXPORT_OBJ = 0, /* DIR/frame_N.obj: v, vn, f per body (o NAME), loose points */
    PBD_EXPORT_PLY = 1, /* DIR/frame_N.ply: binary little-endian, x y z nx ny nz, faces */
    PBD_EXPORT_VTK = 2, /* DIR/frame_N.vtu (appended raw binary) and DIR/series.pvd */
    PBD_EXPORT_PC2 = 3, /* DIR/positions.pc2 (Blender point cache) and DIR/frame_N.obj of
                           the first frame */
} pbd_export_format;

/* "obj", "ply", "vtk", "pc2" to a format; -1 for anything else. */
int pbd_export_format_parse(const char *name);

typedef struct pbd_export pbd_export;

/* Prepares an export of model `m` to folder `dir`: creates it when missing (one level) and
 * checks that files can be made in it. The run exports frames first, first + every, ...
 * up to last (frame numbers from the scene's start; `dt` the frame time step, s). Errors
 * name the folder: "DIR: found a file, expected a folder to export to". */
pbd_status pbd_export_open(pbd_export **out, const char *dir, pbd_export_format format,
                           const pbd_model *m, float dt, long first, long every, long last,
                           pbd_error *err);
/* Writes frame `frame` (positions x, velocities v of every particle). On failure the
 * message names the file and the frame, its temporary file is gone, the frames written
 * before stay, and the export takes no more frames. */
pbd_status pbd_export_frame(pbd_export *e, long frame, const pbd_float4 *x, const pbd_float4 *v,
                            pbd_error *err);
/* Completes what spans frames (series.pvd, positions.pc2: its sample count) with the frames
 * written so far, and syncs every file to disk. Also after a run stopped early: what was
 * exported stays readable. Does nothing after a failed frame. */
pbd_status pbd_export_finish(pbd_export *e, pbd_error *err);
/* Frames written so far. */
long pbd_export_frames(const pbd_export *e);
/* Removes any temporary file and frees; safe on NULL. */
void pbd_export_free(pbd_export *e);

#endif
