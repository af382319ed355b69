#include "clnorm.h"
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
int main(int argc, char **argv) {
  const char *spec = argc > 1 ? argv[1] : NULL;
  size_t rows = argc > 2 ? atoi(argv[2]) : 7, cols = argc > 3 ? atoi(argv[3]) : 1000;
  clnorm_session *s; clnorm_status st = clnorm_session_create(spec, &s);
  if (st) { printf("%s %s\n", clnorm_status_string(st), clnorm_last_error()); return 1; }
  printf("device %s\n", clnorm_session_device_name(s));
  float *x = malloc(rows*cols*4), *y = malloc(rows*cols*4), *g = malloc(cols*4), *mx = malloc(rows*4), *sm = malloc(rows*4);
  for (size_t i = 0; i < rows*cols; i++) x[i] = (rand()/(float)RAND_MAX - 0.5f)*20 + (i/cols)*100.0f;
  for (size_t i = 0; i < cols; i++) g[i] = rand()/(float)RAND_MAX;
  double worst = 0;
  for (int algo = 0; algo < 3; algo++) {
    st = clnorm_softmax_host(s, CLNORM_F32, rows, cols, x, y, algo);
    if (st) { printf("softmax %s %s\n", clnorm_status_string(st), clnorm_last_error()); return 1; }
    for (size_t r = 0; r < rows; r++) { double m = -INFINITY, l = 0; for (size_t c=0;c<cols;c++) m = fmax(m, x[r*cols+c]);
      for (size_t c=0;c<cols;c++) l += exp(x[r*cols+c]-m);
      for (size_t c=0;c<cols;c++) { double ref = exp(x[r*cols+c]-m)/l; double e = fabs(y[r*cols+c]-ref)/fmax(ref,1e-30); if (e > worst) worst = e; } }
    printf("softmax algo %d worst rel %g\n", algo, worst); worst = 0;
  }
  st = clnorm_rmsnorm_host(s, CLNORM_F32, rows, cols, x, g, y, 1e-6f);
  if (st) { printf("rms %s %s\n", clnorm_status_string(st), clnorm_last_error()); return 1; }
  for (size_t r = 0; r < rows; r++) { double ss = 0; for (size_t c=0;c<cols;c++) ss += (double)x[r*cols+c]*x[r*cols+c];
    double rr = 1/sqrt(ss/cols + 1e-6);
    for (size_t c=0;c<cols;c++) { double ref = x[r*cols+c]*rr*g[c]; double e = fabs(y[r*cols+c]-ref)/fmax(fabs(ref),1e-30); if (e > worst) worst = e; } }
  printf("rmsnorm worst rel %g\n", worst); worst = 0;
  st = clnorm_softmax_stats_host(s, CLNORM_F32, rows, cols, x, mx, sm);
  if (st) { printf("stats %s %s\n", clnorm_status_string(st), clnorm_last_error()); return 1; }
  for (size_t r = 0; r < rows; r++) { double m = -INFINITY, l = 0; for (size_t c=0;c<cols;c++) m = fmax(m, x[r*cols+c]);
      for (size_t c=0;c<cols;c++) l += exp(x[r*cols+c]-m);
      double e = fabs(sm[r]-l)/l + fabs(mx[r]-m); if (e > worst) worst = e; }
  printf("stats worst %g\n", worst);
  clnorm_session_destroy(s);
  return 0;
}
