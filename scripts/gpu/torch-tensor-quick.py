# PyTorch timings of the tensor cases bench-tensor does not cover yet (permute, fill, uniform, a
# broadcast gradient, softmax, cross-entropy), CUDA events, medians of 50: run beside
# `kernelport bench` in the same device-tool call.
import torch, json
def t(f, n=50):
    for _ in range(5): f()
    torch.cuda.synchronize()
    s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True)
    ts=[]
    for _ in range(n):
        s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e)*1000)
    ts.sort(); return ts[len(ts)//2]
d='cuda'
a=torch.randn(4096,4096,device=d); b=torch.randn(4096,device=d); y=torch.empty_like(a)
x=torch.randn(1<<24,device=d); yx=torch.empty_like(x)
p=torch.randn(64,128,56,56,device=d); pp=torch.empty(64,56,56,128,device=d)
r={}
r['add 4096x4096+4096']=t(lambda: torch.add(a,b,out=y))
r['exp 16M']=t(lambda: torch.exp(x,out=yx))
r['sum last 4096x4096']=t(lambda: torch.sum(a,dim=1))
r['sum first 4096x4096']=t(lambda: torch.sum(a,dim=0))
r['permute 64x128x56x56 (0,2,3,1)']=t(lambda: pp.copy_(p.permute(0,2,3,1)))
r['fill 16M']=t(lambda: yx.fill_(1.5))
r['uniform 16M']=t(lambda: yx.uniform_())
r['mul_backward-like: da sum over rows']=t(lambda: (a*b).sum(dim=0))
for k,v in r.items(): print("torch %-36s %9.2f us" % (k, v))
s4=torch.randn(4096,4096,device=d); so=torch.empty_like(s4)
print("torch %-36s %9.2f us" % ('softmax 4096x4096', t(lambda: torch.softmax(s4,dim=1,out=so))))
lg=torch.randn(8192,1000,device=d,requires_grad=True); lab=torch.randint(0,1000,(8192,),device=d)
def ce():
    lg.grad=None
    torch.nn.functional.cross_entropy(lg,lab).backward()
print("torch %-36s %9.2f us" % ('cross-entropy fwd+bwd 8192x1000', t(ce)))
