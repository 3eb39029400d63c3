"""Imports the built extension and runs its kernel on the GPU; prints the device and the check."""
import torch

import forge_demo_ext

x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
y = torch.ones_like(x)
out = forge_demo_ext.axpy(2.0, x, y)
torch.cuda.synchronize()
expected = 2.0 * x + y
ok = torch.equal(out, expected)
print(f"device: {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))}), "
      f"torch {torch.__version__}; axpy over {x.numel()} floats: {'ok' if ok else 'MISMATCH'}")
raise SystemExit(0 if ok else 1)
