"""Reads a VTK XML file with VTK's own readers and prints what it holds as JSON.

Usage: read_vtk.py FILE.vti|FILE.vtp. Only vtkmodules.vtkIOXML and
vtkCommonDataModel are imported (no rendering, so no display or GL needed).
"""
import json
import sys

from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLPolyDataReader
from vtkmodules.util.numpy_support import vtk_to_numpy

path = sys.argv[1]
reader = vtkXMLImageDataReader() if path.endswith(".vti") else vtkXMLPolyDataReader()
reader.SetFileName(path)
reader.Update()
if reader.GetErrorCode() != 0:
    sys.exit(f"VTK could not read {path}: error code {reader.GetErrorCode()}")
data = reader.GetOutput()
out = {"points": data.GetNumberOfPoints(), "arrays": {}}
pd = data.GetPointData()
for k in range(pd.GetNumberOfArrays()):
    a = pd.GetArray(k)
    out["arrays"][a.GetName()] = {
        "components": a.GetNumberOfComponents(),
        "type": a.GetDataTypeAsString(),
        "values": vtk_to_numpy(a).ravel().tolist(),
    }
if path.endswith(".vti"):
    out["dimensions"] = list(data.GetDimensions())
    out["origin"] = list(data.GetOrigin())
    out["spacing"] = list(data.GetSpacing())
else:
    pts = data.GetPoints()
    out["coords"] = vtk_to_numpy(pts.GetData()).ravel().tolist() if pts is not None else []
    out["coord_type"] = pts.GetData().GetDataTypeAsString() if pts is not None else None
    out["verts"] = data.GetNumberOfVerts()
print(json.dumps(out))
