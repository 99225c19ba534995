// A sitting rabbit, about 0.55 m tall, facing +z, made of ellipsoids (body, head, ears,
// muzzle, tail, feet) joined into one volume, for `gmsh -3`.
SetFactory("OpenCASCADE");
Sphere(1) = {0, 0.19, -0.02, 1};
Dilate {{0, 0.19, -0.02}, {0.16, 0.16, 0.2}} { Volume{1}; }
Sphere(2) = {0, 0.37, 0.16, 1};
Dilate {{0, 0.37, 0.16}, {0.1, 0.095, 0.105}} { Volume{2}; }
Sphere(3) = {0, 0.34, 0.25, 1};
Dilate {{0, 0.34, 0.25}, {0.05, 0.045, 0.04}} { Volume{3}; }
Sphere(4) = {0.045, 0.53, 0.13, 1};
Dilate {{0.045, 0.53, 0.13}, {0.035, 0.13, 0.022}} { Volume{4}; }
Rotate {{0, 0, 1}, {0.045, 0.42, 0.13}, -0.25} { Volume{4}; }
Sphere(5) = {-0.045, 0.53, 0.13, 1};
Dilate {{-0.045, 0.53, 0.13}, {0.035, 0.13, 0.022}} { Volume{5}; }
Rotate {{0, 0, 1}, {-0.045, 0.42, 0.13}, 0.25} { Volume{5}; }
Sphere(6) = {0, 0.17, -0.22, 0.05};
Sphere(7) = {0.06, 0.06, 0.08, 1};
Dilate {{0.06, 0.06, 0.08}, {0.04, 0.05, 0.08}} { Volume{7}; }
Sphere(8) = {-0.06, 0.06, 0.08, 1};
Dilate {{-0.06, 0.06, 0.08}, {0.04, 0.05, 0.08}} { Volume{8}; }
Sphere(9) = {0.1, 0.05, -0.03, 1};
Dilate {{0.1, 0.05, -0.03}, {0.055, 0.045, 0.13}} { Volume{9}; }
Sphere(10) = {-0.1, 0.05, -0.03, 1};
Dilate {{-0.1, 0.05, -0.03}, {0.055, 0.045, 0.13}} { Volume{10}; }
BooleanUnion{ Volume{1}; Delete; }{ Volume{2:10}; Delete; }
Mesh.MeshSizeMax = 0.04;
