"""A BPF program loaded through the bpf(2) system call, without libbpf, clang or kernel headers:
the calls (`syscall`), an instruction encoder for the few opcodes used (`insns`), the program
that records sysctl writes (`program`) and the ring buffer it fills (`ringbuf`)."""
