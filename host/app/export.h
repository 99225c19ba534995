/* `pbd run --export DIR --format obj|ply|vtk|pc2`: the state at frame 0 and every Nth frame
 * as files that Blender, ParaView and MeshLab open (docs/exports.md). Part of the command
 * line: the library writes no files.
 *
 * Every file is written under a temporary name and renamed into place when complete
 * (pbd_output_*), so no stop (a signal, a full disk, a crash of the process) leaves a partial
 * file under a frame's name. Frame files are not synced: a sync per frame costs more than
 * writing the frame, and a run's frames can be gigabytes that the kernel writes back in its
 * own time; series.pvd and positions.pc2 are synced when the export finishes.
 *
 * Frames are written on a thread of their own, two frames behind at most, so that the solver
 * steps on while a frame goes to disk. */
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
/* Queues frame `frame` (positions x, velocities v of every particle; copied) for writing,
 * waiting while two frames are queued. A frame that failed to write is reported here (or by
 * pbd_export_finish): the message names the file and the frame; its temporary file is gone,
 * the frames written before stay, and the export writes nothing more. */
pbd_status pbd_export_frame(pbd_export *e, long frame, const pbd_float4 *x, const pbd_float4 *v,
                            pbd_error *err);
/* The arrays of the slot the next pbd_export_frame fills (num_particles each), waiting for
 * one to be free: read the state into them and pass them to pbd_export_frame, which then
 * copies nothing. */
pbd_status pbd_export_buffers(pbd_export *e, pbd_float4 **x, pbd_float4 **v, pbd_error *err);
/* Queues frame `frame` whose state read `r` (pbd_solver_read_begin) is filling the arrays
 * pbd_export_buffers returned: the writer waits for the read, checks the frame as the run's
 * guard does (a value not finite or beyond PBD_MAX_COORD fails the export at that frame,
 * named), then writes it. Takes r in every case. */
pbd_status pbd_export_queue(pbd_export *e, long frame, pbd_pending_read *r, pbd_error *err);
/* Writes the queued frames, then completes what spans frames (series.pvd, positions.pc2 and
 * its sample count) with the frames written, synced. Also after a run stopped early: what
 * was exported stays readable. After a failed frame it only reports the failure, once. */
pbd_status pbd_export_finish(pbd_export *e, pbd_error *err);
/* Frames written (after pbd_export_finish). */
long pbd_export_frames(const pbd_export *e);
/* Removes any temporary file and frees; safe on NULL. */
void pbd_export_free(pbd_export *e);

#endif
