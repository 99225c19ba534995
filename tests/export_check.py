"""Reads pbd's exported frames back with independent readers (meshio for OBJ, PLY and VTU; a
reader written here from the format's description for PC2) and checks them against a --dump
of the same run. Run by tests/export.sh with Debian's /usr/bin/python3 (python3-meshio).

  export_check.py compare FORMAT DIR FRAME DUMP [--faces N] [--cells T=N,...] [--bodies ...]
      frame FRAME of DIR against DUMP: positions (and VTU velocities) to 1e-6, normals, faces,
      cells
  export_check.py files DIR EXT FRAMES       the frame files in DIR are exactly FRAMES (1,2,..)
  export_check.py pvd DIR DT                 series.pvd lists every .vtu in DIR at frame * DT
  export_check.py pc2 DIR DUMP START RATE SAMPLES
      positions.pc2's header, its first sample equal to frame_*.obj and its last to DUMP
  export_check.py limit BYTES CMD...         runs CMD with a file size limit (RLIMIT_FSIZE)

Prints what it measured; exits 1 with the reason when a check fails."""
import glob
import os
import re
import resource
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np


def fail(msg):
    print("export_check: " + msg)
    sys.exit(1)


def read_dump(path):
    d = np.loadtxt(path, ndmin=2)
    return d[:, 0:3], d[:, 3:6]


def frame_file(directory, frame, ext):
    hits = [f for f in glob.glob(os.path.join(directory, "frame_*." + ext))
            if int(re.search(r"frame_(\d+)\.", f).group(1)) == frame]
    if len(hits) != 1:
        fail(f"{directory}: found {len(hits)} files for frame {frame} (.{ext}), expected 1")
    return hits[0]


def close(name, a, b, tol=1e-6):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        fail(f"{name}: shape {a.shape}, expected {b.shape}")
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    print(f"{name}: {a.shape[0]} rows, max |difference| {err:.3g}")
    if not err <= tol:
        fail(f"{name}: differs by {err:.3g}, expected at most {tol}")


def check_normals(name, n, faces, points):
    n = np.asarray(n, dtype=np.float64)
    length = np.linalg.norm(n, axis=1)
    used = np.zeros(len(points), dtype=bool)
    if len(faces):
        used[np.asarray(faces).ravel()] = True
    if not np.all(np.abs(length[used] - 1.0) < 1e-4):
        fail(f"{name}: normals of surface vertices are not unit length")
    if not np.all(length[~used] == 0.0):
        fail(f"{name}: vertices without a surface have non-zero normals")
    # The averaged normal of each vertex points to the side its triangles face.
    if len(faces):
        f = np.asarray(faces)
        p = np.asarray(points, dtype=np.float64)
        tri_n = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
        agree = np.einsum("ij,ij->i", tri_n, n[f[:, 0]]) >= 0.0
        if agree.mean() < 0.9:
            fail(f"{name}: {100 * (1 - agree.mean()):.0f} % of triangles face against their "
                 "vertex normals")
    print(f"{name}: {int(used.sum())} unit normals, {int((~used).sum())} zero")


def compare(fmt, directory, frame, dump, opts):
    import meshio

    x, v = read_dump(dump)
    ext = {"obj": "obj", "ply": "ply", "vtk": "vtu"}[fmt]
    path = frame_file(directory, frame, ext)
    m = meshio.read(path)
    close(f"{path} positions", m.points, x)
    faces = np.concatenate([c.data for c in m.cells if c.type == "triangle"]) \
        if any(c.type == "triangle" for c in m.cells) else np.zeros((0, 3), dtype=int)
    if fmt == "obj":
        check_normals(f"{path} vn", m.point_data["obj:vn"], faces, m.points)
        text = open(path).read()
        names = re.findall(r"^o (.+)$", text, re.M)
        if opts.get("bodies") is not None and names != opts["bodies"]:
            fail(f"{path}: objects {names}, expected {opts['bodies']}")
        points = re.findall(r"^p (.+)$", text, re.M)
        print(f"{path}: objects {names}, {len(points)} point elements")
    if fmt == "ply":
        n = np.stack([m.point_data["nx"], m.point_data["ny"], m.point_data["nz"]], axis=1)
        check_normals(f"{path} normals", n, faces, m.points)
        if not open(path, "rb").read(60).startswith(b"ply\nformat binary_little_endian 1.0\n"):
            fail(f"{path}: not binary little-endian PLY")
    if "faces" in opts and len(faces) != opts["faces"]:
        fail(f"{path}: {len(faces)} triangles, expected {opts['faces']}")
    if fmt == "vtk":
        close(f"{path} velocity", m.point_data["velocity"], v)
        counts = {}
        for c in m.cells:
            counts[c.type] = counts.get(c.type, 0) + len(c.data)
        print(f"{path}: cells {counts}")
        if "cells" in opts and counts != opts["cells"]:
            fail(f"{path}: cells {counts}, expected {opts['cells']}")
        tets = [c.data for c in m.cells if c.type == "tetra"]
        if tets:
            t = np.concatenate(tets)
            if len({tuple(sorted(r)) for r in t.tolist()}) != len(t):
                fail(f"{path}: a tetrahedron is listed twice")
            p = m.points
            vol = np.einsum("ij,ij->i", np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]]),
                            p[t[:, 3]] - p[t[:, 0]])
            if not np.all(vol > 0):
                fail(f"{path}: {int(np.sum(vol <= 0))} tetrahedra with VTK volume <= 0")
        if "bodies" in opts:
            body = np.asarray(m.point_data["body"])
            if body.tolist() != opts["bodies"]:
                fail(f"{path}: body ids {body.tolist()[:20]}..., expected {opts['bodies'][:20]}")


def files(directory, ext, frames):
    want = sorted(int(f) for f in frames.split(",") if f)
    found = sorted(int(re.search(r"frame_(\d+)\.", f).group(1))
                   for f in glob.glob(os.path.join(directory, "frame_*." + ext)))
    left = [f for f in os.listdir(directory) if ".tmp." in f or f.startswith(".pbd-export")]
    print(f"{directory}: frames {found}; temporaries {left}")
    if found != want:
        fail(f"{directory}: frames {found}, expected {want}")
    if left:
        fail(f"{directory}: temporary files left: {left}")


def pvd(directory, dt):
    import meshio

    root = ET.parse(os.path.join(directory, "series.pvd")).getroot()
    sets = root.findall("./Collection/DataSet")
    listed = [s.get("file") for s in sets]
    on_disk = sorted(os.path.basename(f) for f in glob.glob(os.path.join(directory, "*.vtu")))
    print(f"series.pvd: {len(listed)} frames; {len(on_disk)} .vtu files")
    if listed != on_disk:
        fail(f"series.pvd lists {listed}, the folder holds {on_disk}")
    for s in sets:
        frame = int(re.search(r"frame_(\d+)\.vtu", s.get("file")).group(1))
        if abs(float(s.get("timestep")) - frame * dt) > 1e-6 * max(1.0, frame * dt):
            fail(f"series.pvd: {s.get('file')} at {s.get('timestep')}, expected {frame * dt}")
        meshio.read(os.path.join(directory, s.get("file")))


def pc2(directory, dump, start, rate, samples):
    import meshio

    data = open(os.path.join(directory, "positions.pc2"), "rb").read()
    magic, version, points, first, sample_rate, count = struct.unpack("<12siiffi", data[:32])
    print(f"positions.pc2: {magic!r} version {version}, {points} points, start {first}, "
          f"rate {sample_rate}, {count} samples, {len(data)} bytes")
    if magic != b"POINTCACHE2\0" or version != 1:
        fail("positions.pc2: bad header")
    if count != samples or first != start or sample_rate != rate:
        fail(f"positions.pc2: {count} samples from {first} every {sample_rate}, expected "
             f"{samples} from {start} every {rate}")
    if len(data) != 32 + 12 * points * count:
        fail(f"positions.pc2: {len(data)} bytes, expected {32 + 12 * points * count}")
    pos = np.frombuffer(data[32:], dtype="<f4").reshape(count, points, 3)
    obj = meshio.read(frame_file(directory, start, "obj"))
    close("positions.pc2 sample 0 vs the OBJ", pos[0], obj.points)
    if dump:
        close("positions.pc2 last sample vs the dump", pos[-1], read_dump(dump)[0])


def limit(size, cmd):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    r = subprocess.run(cmd, preexec_fn=set_limit, stderr=subprocess.PIPE, text=True)
    sys.stdout.write(r.stderr)
    sys.exit(r.returncode)


def parse_opts(args):
    opts = {}
    for k in range(0, len(args), 2):
        key, val = args[k].lstrip("-"), args[k + 1]
        if key == "faces":
            opts[key] = int(val)
        elif key == "cells":
            opts[key] = {p.split("=")[0]: int(p.split("=")[1]) for p in val.split(",")}
        elif key == "bodies":
            opts[key] = val.split(",") if not val[0].isdigit() else [int(b) for b in val.split(",")]
    return opts


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    what = argv[1]
    if what == "compare":
        compare(argv[2], argv[3], int(argv[4]), argv[5], parse_opts(argv[6:]))
    elif what == "files":
        files(argv[2], argv[3], argv[4])
    elif what == "pvd":
        pvd(argv[2], float(argv[3]))
    elif what == "pc2":
        pc2(argv[2], argv[3], float(argv[4]), float(argv[5]), int(argv[6]))
    elif what == "limit":
        limit(int(argv[2]), argv[3:])
    else:
        fail(f"unknown check '{what}'")


if __name__ == "__main__":
    main(sys.argv)
