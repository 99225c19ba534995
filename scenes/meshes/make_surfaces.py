#!/usr/bin/env python3
"""Writes the surfaces that scenes/meshes/make_assets.sh meshes or ships: torus.off (a
closed torus for TetGen), tablecloth.obj (a round cloth, with texture coordinates split
along a seam) and balloon.obj (a closed sphere for the balloon). Deterministic: the same
files every run."""
import math

# A torus about the y axis: ring radius R, tube radius r, n segments around the ring and m
# around the tube.
R, r, n, m = 0.35, 0.15, 24, 10
verts, faces = [], []
for i in range(n):
    a = 2 * math.pi * i / n
    for j in range(m):
        b = 2 * math.pi * j / m
        d = R + r * math.cos(b)
        verts.append((d * math.cos(a), r * math.sin(b), d * math.sin(a)))
for i in range(n):
    for j in range(m):
        p, q = i * m + j, ((i + 1) % n) * m + j
        p1, q1 = i * m + (j + 1) % m, ((i + 1) % n) * m + (j + 1) % m
        faces += [(p, p1, q1), (p, q1, q)]
with open("torus.off", "w") as f:
    f.write("OFF\n%d %d 0\n" % (len(verts), len(faces)))
    for v in verts:
        f.write("%.6f %.6f %.6f\n" % v)
    for t in faces:
        f.write("3 %d %d %d\n" % t)

# A round cloth of radius 0.8 m in the xz plane: a centre vertex and `rings` rings of 6k
# vertices. Its texture coordinates are polar (u = angle, v = radius), so the ring's last
# corner and its first have different vt: a seam along the +x axis that the loader must not
# tear.
rings, radius = 10, 0.8
verts, uvs, faces = [(0.0, 0.0, 0.0)], [], []
uv_index = {}


def uv(ring, k, count):
    key = (ring, k)
    if key not in uv_index:
        uvs.append((k / count if count else 0.0, ring / rings))
        uv_index[key] = len(uvs)
    return uv_index[key]


start = [0]
for ring in range(1, rings + 1):
    start.append(len(verts))
    count = 6 * ring
    for k in range(count):
        a = 2 * math.pi * k / count
        verts.append((radius * ring / rings * math.cos(a), 0.0, radius * ring / rings * math.sin(a)))


def corner(ring, k):
    """Vertex and vt of corner k of a ring (k may be the ring's count: the seam)."""
    count = 6 * ring
    v = 1 if ring == 0 else start[ring] + k % count + 1
    return v, uv(ring, k, count)


for ring in range(1, rings + 1):
    inner, outer = 6 * (ring - 1), 6 * ring
    # Walk both rings together; each step adds a triangle on whichever ring lags.
    i = o = 0
    while i < inner or o < outer:
        if o < outer and (inner == 0 or (o + 1) / outer <= (i + 1) / inner or i == inner):
            faces.append((corner(ring - 1, i), corner(ring, o + 1), corner(ring, o)))
            o += 1
        else:
            faces.append((corner(ring - 1, i), corner(ring - 1, i + 1), corner(ring, o)))
            i += 1
with open("tablecloth.obj", "w") as f:
    f.write("# a round cloth, radius %g m, %d rings; vt is polar, with a seam at +x\n" % (radius, rings))
    f.write("o tablecloth\n")
    for v in verts:
        f.write("v %.6f %.6f %.6f\n" % v)
    for t in uvs:
        f.write("vt %.6f %.6f\n" % t)
    f.write("s off\n")
    for t in faces:
        f.write("f %s\n" % " ".join("%d/%d" % c for c in t))

# A closed sphere of radius 0.25 m for the balloon: an icosahedron whose triangles are cut
# in four `levels` times, the new vertices pushed out onto the sphere; counter-clockwise
# seen from outside.
levels, radius = 2, 0.25
t = (1 + math.sqrt(5)) / 2
verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t),
         (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
verts = [tuple(c / math.sqrt(sum(x * x for x in v)) for c in v) for v in verts]
faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
for _ in range(levels):
    middle, split = {}, []

    def mid(a, b):
        key = (min(a, b), max(a, b))
        if key not in middle:
            m = [(verts[a][k] + verts[b][k]) / 2 for k in range(3)]
            n = math.sqrt(sum(x * x for x in m))
            verts.append(tuple(x / n for x in m))
            middle[key] = len(verts) - 1
        return middle[key]

    for a, b, c in faces:
        ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
        split += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
    faces = split
with open("balloon.obj", "w") as f:
    f.write("# a closed sphere, radius %g m: an icosahedron subdivided %d times\n" % (radius, levels))
    f.write("o balloon\n")
    for v in verts:
        f.write("v %.6f %.6f %.6f\n" % tuple(radius * x for x in v))
    for a, b, c in faces:
        f.write("f %d %d %d\n" % (a + 1, b + 1, c + 1))
