// Micro-measurements for the x86 [memory].copy figure (docs/profiles-memory.md): the core clock over
// the TSC (a dependent add chain, one core cycle per add) and rep movsb (the Linux 6.1 x86-64
// copy_user_enhanced_fast_string instruction) with source and destination L1-resident, in TSC and core
// cycles per byte. Build and run: gcc -O2 -o /tmp/ub docs/bench/rep-movsb-x86.c && taskset -c 1 /tmp/ub
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <x86intrin.h>
static inline uint64_t t0(void){ _mm_lfence(); uint64_t t=__rdtsc(); _mm_lfence(); return t; }
static inline uint64_t t1(void){ unsigned a; uint64_t t=__rdtscp(&a); _mm_lfence(); return t; }
static int cmp(const void*a,const void*b){ double x=*(double*)a,y=*(double*)b; return x<y?-1:x>y; }
static void rep_movsb(void*d,const void*s,size_t n){ __asm__ volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory"); }
int main(void){
  enum{R=31}; double v[R];
  // 1) dependent adds: 1 core cycle each
  for(int r=0;r<R;r++){ uint64_t x=r; uint64_t a=t0();
    for(int i=0;i<100000;i++){ __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0":"+r"(x)); }
    uint64_t b=t1(); v[r]=(double)(b-a)/1e6; }
  qsort(v,R,sizeof v[0],cmp); printf("tsc_per_core_cycle median %.4f q1 %.4f q3 %.4f\n",v[R/2],v[R/4],v[3*R/4]);
  double ratio=v[R/2];
  size_t sizes[]={64,256,1448,1500,4096,8192,16384};
  static char src[16384+64] __attribute__((aligned(64))), dst[16384+64] __attribute__((aligned(64)));
  memset(src,1,sizeof src); memset(dst,2,sizeof dst);
  for(unsigned k=0;k<sizeof sizes/sizeof sizes[0];k++){ size_t n=sizes[k];
    for(int r=0;r<R;r++){ for(int w=0;w<10;w++) rep_movsb(dst,src,n);
      uint64_t a=t0(); for(int i=0;i<1000;i++) rep_movsb(dst,src+ (i&1),n); uint64_t b=t1();
      v[r]=(double)(b-a)/1000.0; }
    qsort(v,R,sizeof v[0],cmp);
    printf("rep movsb %6zu B: %.1f TSC cycles/call (q1 %.1f q3 %.1f) = %.4f TSC cycles/B = %.4f core cycles/B\n",n,v[R/2],v[R/4],v[3*R/4],v[R/2]/n,v[R/2]/n/ratio);
  }
  return 0; }
