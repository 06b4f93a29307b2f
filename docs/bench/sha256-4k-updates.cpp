// SHA-256 over `chunk`-byte EVP_DigestUpdate calls of a `len`-byte buffer, as kdsim validate's hash run
// hashes, without its probe and timer threads: TSC cycles per byte over 1,000 digests (docs/validation.md,
// session 19). Build and run: g++ -O2 sha256-4k-updates.cpp -o sha256-4k-updates -lcrypto &&
// taskset -c 0 ./sha256-4k-updates 1048576 4096
#include <openssl/evp.h>
#include <x86intrin.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdlib>
#include <cstring>
int main(int argc,char**argv){
  size_t len = atol(argv[1]); size_t chunk = atol(argv[2]);
  unsigned char* d=(unsigned char*)aligned_alloc(64, 1<<20); memset(d,0x5a,1<<20);
  EVP_MD_CTX* md=EVP_MD_CTX_new(); unsigned char out[32]; unsigned ol;
  std::vector<double> v;
  for(int r=0;r<1000;r++){
    unsigned long long t0=__rdtsc();
    EVP_DigestInit_ex(md,EVP_sha256(),nullptr);
    for(size_t p=0;p<len;p+=chunk) EVP_DigestUpdate(md,d+p,std::min(chunk,len-p));
    EVP_DigestFinal_ex(md,out,&ol);
    v.push_back(double(__rdtsc()-t0)/len);
  }
  std::sort(v.begin(),v.end());
  double s=0; for(double x: v) s+=x; printf("mean %.3f ", s/v.size()); printf("len %zu chunk %zu: min %.3f p25 %.3f med %.3f c/B\n",len,chunk,v[0],v[50],v[100]);
}
