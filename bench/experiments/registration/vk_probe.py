"""Where registration's time goes (issue 15): the Vulkan loader alone, timed from Python with ctypes, in a fresh
process: dlopen libvulkan, vkCreateInstance (loads every ICD), vkEnumeratePhysicalDevices, and the properties of
each device; then, in the same process, ONNX Runtime's registration of our library (wgpu's instance and adapters
plus our factory), or the other way round with `ours-first`. Prints one JSON line (ms).

    python3 bench/experiments/registration/vk_probe.py LIB [ours-first]
"""
import ctypes
import json
import sys
import time

out = {}


def raw():
    t = time.perf_counter()
    vk = ctypes.CDLL("libvulkan.so.1")
    out["dlopen"] = (time.perf_counter() - t) * 1e3

    class InstanceInfo(ctypes.Structure):
        _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                    ("pApplicationInfo", ctypes.c_void_p), ("enabledLayerCount", ctypes.c_uint32),
                    ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", ctypes.c_uint32),
                    ("ppEnabledExtensionNames", ctypes.c_void_p)]

    info = InstanceInfo(1, None, 0, None, 0, None, 0, None)  # VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
    inst = ctypes.c_void_p()
    t = time.perf_counter()
    rc = vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(inst))
    out["create_instance"] = (time.perf_counter() - t) * 1e3
    out["rc"] = rc
    n = ctypes.c_uint32(0)
    t = time.perf_counter()
    vk.vkEnumeratePhysicalDevices(inst, ctypes.byref(n), None)
    devs = (ctypes.c_void_p * n.value)()
    vk.vkEnumeratePhysicalDevices(inst, ctypes.byref(n), devs)
    out["enumerate"] = (time.perf_counter() - t) * 1e3
    out["devices"] = n.value
    props = ctypes.create_string_buffer(1024)
    t = time.perf_counter()
    for d in devs:
        vk.vkGetPhysicalDeviceProperties(ctypes.c_void_p(d), props)
    out["properties"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    vk.vkDestroyInstance(inst, None)
    out["destroy"] = (time.perf_counter() - t) * 1e3


import onnxruntime as ort  # noqa: E402

if "ours-first" not in sys.argv:
    raw()
t = time.perf_counter()
ort.register_execution_provider_library("probe", sys.argv[1])
out["ort_register_ours"] = (time.perf_counter() - t) * 1e3
t = time.perf_counter()
ort.get_ep_devices()
out["get_ep_devices"] = (time.perf_counter() - t) * 1e3
sys.path.insert(0, "python")
import onnxruntime_ep_wgpu as loc  # noqa: E402

out["our_enumerate_phase"] = loc.startup_stats(sys.argv[1])["enumerate"]["ms"]
if "ours-first" in sys.argv:
    raw()
print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}))
