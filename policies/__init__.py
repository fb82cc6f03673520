"""ccgym.policies"""

# What a learned policy's head outputs (policies/lstm.py): here, where a config check can read
# it without importing torch.
HEADS = ("classes", "log_change")
