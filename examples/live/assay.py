"""A stand-in for a real assay: one run of arm $ARMLAB_ARM, printed as a JSON reward.

armlab's `command` adapter starts this script once per trial with the trial in the
environment (ARMLAB_TRIAL_ID, ARMLAB_ARM, ARMLAB_ARM_NAME, ARMLAB_PULL, ARMLAB_ATTEMPT).
The outcome is a pure function of (arm, pull, attempt), so a run resumed from its journal
gets the same answers as one that never stopped.  Each variant "converts" with its own
probability; about one attempt in ten fails the way instruments do (non-zero exit, message
on stderr; a retry usually succeeds), and each run takes a few tens of milliseconds.
Only the standard library is used.
"""

import hashlib
import json
import os
import sys
import time

CONVERSION = {"A": 0.30, "B": 0.45, "C": 0.60, "D": 0.50}


def uniform(*words: object) -> float:
    digest = hashlib.sha256("/".join(map(str, words)).encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2**64


def main() -> int:
    arm_name, pull = os.environ["ARMLAB_ARM_NAME"], int(os.environ["ARMLAB_PULL"])
    attempt = int(os.environ["ARMLAB_ATTEMPT"])
    time.sleep(0.01 + 0.04 * uniform("latency", arm_name, pull, attempt))
    if uniform("failure", arm_name, pull, attempt) < 0.10:
        print(f"assay: plate reader timeout on variant {arm_name}", file=sys.stderr)
        return 3
    converted = uniform("outcome", arm_name, pull) < CONVERSION[arm_name]
    print(json.dumps({"reward": float(converted), "variant": arm_name}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
