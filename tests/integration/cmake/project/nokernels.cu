// No kernel: the library carries only kernel-less cubins (no device code for the gate).
extern "C" int host_only(int x) { return x + 1; }
