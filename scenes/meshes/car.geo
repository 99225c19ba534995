// A toy car, 1.8 m long along x, for `gmsh -3`: a chassis, a cabin and four wheels joined
// into one volume; its wheels touch y = 0.
SetFactory("OpenCASCADE");
Box(1) = {-0.9, 0.12, -0.4, 1.8, 0.3, 0.8};
Box(2) = {-0.45, 0.42, -0.35, 0.9, 0.28, 0.7};
Cylinder(3) = {0.55, 0.16, 0.28, 0, 0, 0.16, 0.16};
Cylinder(4) = {0.55, 0.16, -0.44, 0, 0, 0.16, 0.16};
Cylinder(5) = {-0.55, 0.16, 0.28, 0, 0, 0.16, 0.16};
Cylinder(6) = {-0.55, 0.16, -0.44, 0, 0, 0.16, 0.16};
BooleanUnion{ Volume{1}; Delete; }{ Volume{2:6}; Delete; }
Mesh.MeshSizeMax = 0.08;
