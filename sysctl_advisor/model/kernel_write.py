"""What the kernel does with a value written to an integer sysctl.

`sysctl -p` and systemd-sysctl hand the kernel the value text of a line as it stands (procps
trims the ends; there are no inline comments). The kernel's integer handlers
(__do_proc_dointvec, __do_proc_doulongvec_minmax) then read it field by field: skip blanks,
read one number with proc_get_long() (an optional '-', then strtoul in base 0: 0x hex,
0-prefixed octal, decimal), which must end at a space, tab or newline or at the end of the
text, and store it before reading the next. So:

* the first field that is not such a number stops the write with EINVAL; the fields read
  before it are already stored (the vector is left half-written);
* once the key's elements are all read, whatever follows is dropped without an error (a
  "# comment", a fourth number);
* fewer fields than elements store only those; the other elements keep their value in force;
* nothing at all (an empty value) is EINVAL.

Measured on 6.18 with procps 4.0.2 inside `unshare -n` (tests/model/test_kernel_write.py runs
every case against the kernel it is on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TMPBUFLEN = 22  # proc_get_long()'s buffer: a token of TMPBUFLEN - 1 characters is refused
# What strtoul in base 0 reads whole: 0x hex, 0-prefixed octal, decimal (ASCII only).
_KERNEL_INT = re.compile(r"(-?)(?:0[xX]([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))")
# A field starts after what proc_skip_spaces() passes over (the kernel's isspace(): space, \t,
# \n, \v, \f, \r) and runs to the next space, tab or newline (proc_wspace_sep, the only
# characters allowed right after a number): "15\v16" is one field, and EINVAL.
FIELD = re.compile(r"[ \t\n\v\f\r]*([^ \t\n]+)")


def kernel_int(field: str) -> int | None:
    """One field as proc_get_long() reads it, or None where the kernel says EINVAL: an
    optional '-', then strtoul in base 0; a token that fills its 21-character buffer is
    refused. (A number beyond the key's range is a matter for the key's bounds: older kernels
    wrapped it where newer ones refuse it.)"""
    match = _KERNEL_INT.fullmatch(field)
    if match is None or len(field) >= _TMPBUFLEN - 1:
        return None
    sign, hexa, octal, decimal = match.groups()
    number = int(hexa, 16) if hexa else int(octal, 8) if octal else int(decimal, 10)
    return -number if sign else number


@dataclass(frozen=True)
class KernelWrite:
    """The outcome of writing `value` to a key of `length` integer elements."""

    stored: tuple[int, ...]  # the elements the kernel stores, from the first, in order
    refused: bool  # the write fails with EINVAL (sysctl -p reports an error)
    stopped_at: str | None  # the field that made it fail
    ignored: str  # text after the last element that the kernel drops without an error
    length: int

    @property
    def complete(self) -> bool:
        """Every element set and nothing refused: the value means what it says."""
        return not self.refused and len(self.stored) == self.length

    def as_data(self) -> dict[str, object]:
        """Plain data for check rules' expressions."""
        return {
            "stored": list(self.stored),
            "refused": self.refused,
            "stopped_at": self.stopped_at,
            "ignored": self.ignored,
            "length": self.length,
            "complete": self.complete,
        }


def kernel_write(value: str, length: int) -> KernelWrite:
    """What the kernel stores when `value` is written to a key of `length` elements."""
    stored: list[int] = []
    for match in FIELD.finditer(value):
        field = match.group(1)
        if len(stored) == length:
            return KernelWrite(tuple(stored), False, None, value[match.start(1) :], length)
        number = kernel_int(field)
        if number is None:
            return KernelWrite(tuple(stored), True, field, "", length)
        stored.append(number)
    if not stored:  # nothing but blanks: the kernel reads no field and says EINVAL
        return KernelWrite((), True, "", "", length)
    return KernelWrite(tuple(stored), False, None, "", length)
