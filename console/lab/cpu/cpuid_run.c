/*
 * cpuid-run: run a program on a lab node's CPU.
 *
 *   cpuid-run TABLE PROGRAM [ARG...]
 *
 * A lab node's CPU model is the lab's to write (its nodes are simulated), but nfd-worker reads the CPU with the
 * CPUID instruction itself (klauspost/cpuid), not from a file. Linux lets a thread make CPUID fault
 * (arch_prctl(ARCH_SET_CPUID, 0), Documentation/arch/x86/cpuid-faulting; /proc/cpuinfo flag cpuid_fault, which KVM
 * emulates for every guest): the instruction then raises SIGSEGV. This tracer starts PROGRAM under ptrace, turns
 * CPUID faulting on in it right after execve (the kernel resets it on exec: arch_setup_new_exec), follows its
 * threads (which inherit the setting on clone) and answers each CPUID from TABLE, so the program and everything it
 * links (the Go runtime included) see the node's CPU from their first instruction. Any other signal is delivered
 * unchanged. Child processes the program forks are not traced; an exec resets faulting, so they see the host's CPU.
 *
 * TABLE: one line per leaf, "LEAF SUBLEAF EAX EBX ECX EDX" in hex, SUBLEAF "*" for a leaf without subleaves. A
 * leaf the table does not name answers zeros. Exit status: PROGRAM's, 128+N if a signal N killed it, 125 for a
 * problem of cpuid-run itself (message on stderr).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARCH_SET_CPUID 0x1012
#define MAX_LEAVES 256
#define ANY_SUBLEAF 0xffffffffu

struct leaf {
    uint32_t leaf, subleaf, regs[4];
};

static struct leaf table[MAX_LEAVES];
static int n_leaves;

static void fail(const char *what) {
    fprintf(stderr, "cpuid-run: %s: %s\n", what, strerror(errno));
    exit(125);
}

static void read_table(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) fail(path);
    char line[256], sub[32];
    while (fgets(line, sizeof line, f)) {
        struct leaf *l = &table[n_leaves];
        if (line[0] == '#' || line[0] == '\n') continue;
        if (n_leaves == MAX_LEAVES ||
            sscanf(line, "%x %31s %x %x %x %x", &l->leaf, sub, &l->regs[0], &l->regs[1], &l->regs[2],
                   &l->regs[3]) != 6) {
            fprintf(stderr, "cpuid-run: %s: bad line (or more than %d): %s", path, MAX_LEAVES, line);
            exit(125);
        }
        l->subleaf = strcmp(sub, "*") == 0 ? ANY_SUBLEAF : (uint32_t)strtoul(sub, NULL, 16);
        n_leaves++;
    }
    fclose(f);
}

static void answer(struct user_regs_struct *r) {
    uint32_t leaf = (uint32_t)r->rax, subleaf = (uint32_t)r->rcx;
    uint32_t out[4] = {0, 0, 0, 0};
    for (int i = 0; i < n_leaves; i++) {
        if (table[i].leaf == leaf && (table[i].subleaf == ANY_SUBLEAF || table[i].subleaf == subleaf)) {
            memcpy(out, table[i].regs, sizeof out);
            break;
        }
    }
    r->rax = out[0];
    r->rbx = out[1];
    r->rcx = out[2];
    r->rdx = out[3];
    r->rip += 2;
}

/* At the exec stop, run arch_prctl(ARCH_SET_CPUID, 0) in the tracee: a `syscall` written over its entry point,
 * one single step, then its text and registers put back. */
static void fault_cpuid(pid_t pid) {
    struct user_regs_struct saved, r;
    if (ptrace(PTRACE_GETREGS, pid, 0, &saved) < 0) fail("PTRACE_GETREGS");
    errno = 0;
    long text = ptrace(PTRACE_PEEKTEXT, pid, (void *)saved.rip, 0);
    if (errno) fail("PTRACE_PEEKTEXT");
    long patched = (text & ~0xffffL) | 0x050f; /* 0f 05: syscall */
    if (ptrace(PTRACE_POKETEXT, pid, (void *)saved.rip, (void *)patched) < 0) fail("PTRACE_POKETEXT");
    /* The exec stop is inside execve: the first step only returns from it (and sets rax to execve's 0), so the
     * registers are set again until the step has run the written syscall. */
    r = saved;
    for (int tries = 0; r.rip != saved.rip + 2; tries++) {
        if (tries == 3) {
            fputs("cpuid-run: the program did not run arch_prctl(ARCH_SET_CPUID)\n", stderr);
            kill(pid, SIGKILL);
            exit(125);
        }
        r = saved;
        r.rax = SYS_arch_prctl;
        r.rdi = ARCH_SET_CPUID;
        r.rsi = 0;
        if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0) fail("PTRACE_SETREGS");
        if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) < 0) fail("PTRACE_SINGLESTEP");
        int status;
        if (waitpid(pid, &status, __WALL) < 0) fail("waitpid");
        if (ptrace(PTRACE_GETREGS, pid, 0, &r) < 0) fail("PTRACE_GETREGS");
    }
    if ((long)r.rax != 0) {
        fprintf(stderr, "cpuid-run: this machine cannot make CPUID fault (arch_prctl(ARCH_SET_CPUID): %s); "
                        "a CPU with CPUID faulting (cpuid_fault in /proc/cpuinfo) is needed\n", strerror((int)-r.rax));
        kill(pid, SIGKILL);
        exit(125);
    }
    if (ptrace(PTRACE_POKETEXT, pid, (void *)saved.rip, (void *)text) < 0) fail("PTRACE_POKETEXT");
    if (ptrace(PTRACE_SETREGS, pid, 0, &saved) < 0) fail("PTRACE_SETREGS");
}

static int is_cpuid(pid_t pid, struct user_regs_struct *r) {
    errno = 0;
    long text = ptrace(PTRACE_PEEKTEXT, pid, (void *)r->rip, 0);
    return errno == 0 && (text & 0xffff) == 0xa20f; /* 0f a2: cpuid */
}

static volatile pid_t program;
static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static void pass_on(int sig) {
    if (program > 0) kill(program, sig);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cpuid-run TABLE PROGRAM [ARG...]\n");
        return 125;
    }
    read_table(argv[1]);
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0) fail("PTRACE_TRACEME");
        raise(SIGSTOP);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "cpuid-run: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    if (waitpid(child, &status, 0) < 0) fail("waitpid");
    program = child;
    long opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL;
    if (ptrace(PTRACE_SETOPTIONS, child, 0, (void *)opts) < 0) fail("PTRACE_SETOPTIONS");
    if (ptrace(PTRACE_CONT, child, 0, 0) < 0) fail("PTRACE_CONT");
    /* the signals cpuid-run receives (a kubelet's SIGTERM to the pod) go to the program */
    struct sigaction forward = {.sa_handler = pass_on};
    sigemptyset(&forward.sa_mask);
    for (int i = 0; i < (int)(sizeof forwarded / sizeof forwarded[0]); i++) sigaction(forwarded[i], &forward, NULL);
    for (;;) {
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR) continue;
            if (errno == ECHILD) return 125;
            fail("waitpid");
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            if (pid == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        int sig = WSTOPSIG(status), event = status >> 16, deliver = 0;
        if (event == PTRACE_EVENT_EXEC) {
            fault_cpuid(pid);
        } else if (event == 0 && sig == SIGSEGV) {
            struct user_regs_struct r;
            if (ptrace(PTRACE_GETREGS, pid, 0, &r) == 0 && is_cpuid(pid, &r)) {
                answer(&r);
                if (ptrace(PTRACE_SETREGS, pid, 0, &r) < 0) fail("PTRACE_SETREGS");
            } else {
                deliver = sig;
            }
        } else if (event == 0 && sig != SIGSTOP && sig != SIGTRAP) {
            /* SIGSTOP: a new thread's first stop (PTRACE_O_TRACECLONE); SIGTRAP: the single step's */
            deliver = sig;
        }
        /* a thread that exited meanwhile: ESRCH is expected */
        ptrace(PTRACE_CONT, pid, 0, (void *)(long)deliver);
    }
}
