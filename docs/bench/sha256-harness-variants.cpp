// kdsim validate's hash run taken apart (docs/validation.md, session 19): SHA-256 over its 16 buffer sizes
// (16 KiB..1 MiB, 80 passes), 4 KiB EVP_DigestUpdate calls, SCHED_FIFO 96 on CPU 0. Variant bits: 1 the hashing
// in a std::thread, 2 rdtsc brackets around each update through lambdas, 4 two sleeping FIFO neighbours
// (CPU 0 and CPU 1). Build and run: g++ -O2 sha256-harness-variants.cpp -o v -lcrypto -pthread && ./v 0
#include <openssl/evp.h>
#include <x86intrin.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <thread>
#include <atomic>
#include <algorithm>
#include <sched.h>
#include <pthread.h>
#include <time.h>
static long long mono(){timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static void fifo(int p){sched_param sp{};sp.sched_priority=p;sched_setscheduler(0,SCHED_FIFO,&sp);}
int main(int argc,char**argv){
  int variant=atoi(argv[1]); // bit0: thread; bit1: rdtsc brackets via lambdas; bit2: sleeping neighbour thread on CPU0 + CPU1
  std::vector<size_t> kib={512,64,256,1024,128,768,32,384,16,896,192,640,48,320,96,1024};
  unsigned char* d=(unsigned char*)aligned_alloc(4096,1<<20); memset(d,0x5a,1<<20);
  std::atomic<bool> stop{false};
  std::thread n0, n1;
  if(variant&4){ n0=std::thread([&]{pin(0);fifo(95);while(!stop){timespec t{0,50000000};nanosleep(&t,nullptr);}});
                 n1=std::thread([&]{pin(1);fifo(94);while(!stop){timespec t{0,50000000};nanosleep(&t,nullptr);}}); }
  double mbps=0; std::uint64_t brackets=0; double longest=0; std::uint64_t bstart=0;
  auto body=[&]{ pin(0); fifo(96);
    EVP_MD_CTX* md=EVP_MD_CTX_new(); unsigned char out[32]; unsigned ol;
    auto begin=[&]{ bstart=__rdtsc(); ++brackets; };
    auto end=[&]{ longest=std::max(longest,double(__rdtsc()-bstart)); };
    size_t bytes=0; long long t0=mono();
    for(int pass=0;pass<80;pass++) for(size_t k: kib){
      size_t len=k*1024;
      EVP_DigestInit_ex(md,EVP_sha256(),nullptr);
      for(size_t p=0;p<len;p+=4096){ if(variant&2) begin(); EVP_DigestUpdate(md,d+p,std::min<size_t>(4096,len-p)); if(p+4096>=len) EVP_DigestFinal_ex(md,out,&ol); if(variant&2) end(); }
      bytes+=len; }
    mbps=bytes/((mono()-t0)/1e9)/1e6; };
  if(variant&1){ std::thread t(body); t.join(); } else body();
  stop=true; if(n0.joinable()){n0.join();n1.join();}
  printf("variant %d: %.0f MB/s\n",variant,mbps);
}
