"""pynvml's constants and error classes, for the NVML stand-in (values from nvidia-ml-py)."""

from __future__ import annotations

# --- constants (values from pynvml) ---------------------------------------------------------
NVML_SUCCESS = 0
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_CLOCK_VIDEO = 0, 1, 2, 3
NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES = 0, 1
NVML_FEATURE_DISABLED, NVML_FEATURE_ENABLED = 0, 1
NVML_NVLINK_MAX_LINKS = 18
NVML_NVLINK_DEVICE_TYPE_GPU, NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0, 1
NVML_NVLINK_DEVICE_TYPE_SWITCH, NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 2, 0xFF
NVML_P2P_CAPS_INDEX_READ, NVML_P2P_CAPS_INDEX_WRITE, NVML_P2P_CAPS_INDEX_NVLINK = 0, 1, 2
NVML_P2P_CAPS_INDEX_ATOMICS, NVML_P2P_CAPS_INDEX_PCI = 3, 4
NVML_P2P_STATUS_OK, NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED = 0, 1
NVML_P2P_STATUS_GPU_NOT_SUPPORTED, NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED = 2, 3
NVML_P2P_STATUS_DISABLED_BY_REGKEY, NVML_P2P_STATUS_NOT_SUPPORTED = 4, 5
NVML_P2P_STATUS_UNKNOWN = 6
NVML_TOPOLOGY_INTERNAL, NVML_TOPOLOGY_SINGLE, NVML_TOPOLOGY_MULTIPLE = 0, 10, 20
NVML_TOPOLOGY_HOSTBRIDGE, NVML_TOPOLOGY_NODE, NVML_TOPOLOGY_SYSTEM = 30, 40, 50
NVML_TOPOLOGY_CPU = NVML_TOPOLOGY_NODE
NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = 0, 1
nvmlClocksEventReasonGpuIdle = 0x1
nvmlClocksEventReasonApplicationsClocksSetting = 0x2
nvmlClocksEventReasonSwPowerCap = 0x4
nvmlClocksEventReasonHwSlowdown = 0x8
nvmlClocksEventReasonSwThermalSlowdown = 0x20
nvmlClocksThrottleReasonGpuIdle = 0x1
nvmlMemory_v2 = 0x02000028  # pynvml's sizeof-based version tag for c_nvmlMemory_v2_t

_ERRORS = {
    1: "Uninitialized",
    2: "InvalidArgument",
    3: "NotSupported",
    4: "NoPermission",
    5: "AlreadyInitialized",
    6: "NotFound",
    7: "InsufficientSize",
    8: "InsufficientPower",
    9: "DriverNotLoaded",
    10: "Timeout",
    11: "IrqIssue",
    12: "LibraryNotFound",
    13: "FunctionNotFound",
    14: "CorruptedInforom",
    15: "GpuIsLost",
    16: "ResetRequired",
    17: "OperatingSystem",
    18: "LibRmVersionMismatch",
    19: "InUse",
    20: "Memory",
    21: "NoData",
    22: "VgpuEccNotSupported",
    23: "InsufficientResources",
    24: "FreqNotSupported",
    25: "ArgumentVersionMismatch",
    26: "Deprecated",
    27: "NotReady",
    999: "Unknown",
}
_MESSAGES = {
    "NotSupported": "Not Supported",
    "DriverNotLoaded": "Driver Not Loaded",
    "InvalidArgument": "Invalid Argument",
    "Uninitialized": "Uninitialized",
    "NotFound": "Not Found",
    "LibraryNotFound": "NVML Shared Library Not Found",
}


class NVMLError(Exception):
    """pynvml's error: `NVMLError(code)` returns the matching subclass; `.value` is the code."""

    _by_value: dict[int, type] = {}

    def __new__(cls, value: int):
        if cls is NVMLError:
            cls = NVMLError._by_value.get(value, NVMLError)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        name = _ERRORS.get(self.value, "Unknown")
        return _MESSAGES.get(name, name)


for _code, _name in _ERRORS.items():
    _cls = type(f"NVMLError_{_name}", (NVMLError,), {})
    NVMLError._by_value[_code] = _cls
    globals()[f"NVMLError_{_name}"] = _cls
    globals()[f"NVML_ERROR_{_name.upper()}"] = _code
