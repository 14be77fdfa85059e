/* The pod sandbox's process, as the pause image's: sleeps until SIGINT or SIGTERM, reaping the children
 * it inherits. Built static by .ci/real-cluster, alone in a scratch image. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
static void die(int s){ (void)s; _exit(0); }
static void reap(int s){ (void)s; while (waitpid(-1, NULL, WNOHANG) > 0); }
int main(void){
  struct sigaction a = {0}, r = {0};
  a.sa_handler = die; sigaction(SIGINT, &a, NULL); sigaction(SIGTERM, &a, NULL);
  r.sa_handler = reap; r.sa_flags = SA_NOCLDSTOP; sigaction(SIGCHLD, &r, NULL);
  for (;;) pause();
}
