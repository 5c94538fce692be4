; BIT of the DARM paper (tests/corpus/darm_bit.wir, Fig. 1) as LLVM IR, for comparing with
; LLVM 14's own flattening: `opt-14 -O3 -S darm_bit.ll`. The same control flow and
; instructions as the warplift kernel (block and grid sizes are arguments); barriers are
; HIP's __syncthreads(): a workgroup fence, s_barrier, a fence.
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

@shared = internal addrspace(3) global [1024 x i32] undef, align 4

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier() #0

attributes #0 = { convergent nounwind }

define amdgpu_kernel void @darm_bit(i32 addrspace(1)* %values, i32 %n, i32 %bd, i32 %gd) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %buckets = udiv i32 %n, %bd
  %st = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @shared, i32 0, i32 %tid
  br label %bucket

bucket:
  %bk = phi i32 [ %bid, %entry ], [ %bk.next, %done ]
  %more = icmp ult i32 %bk, %buckets
  br i1 %more, label %copy, label %exit

copy:
  %e = mul i32 %bk, %bd
  %idx = add i32 %e, %tid
  %idx64 = zext i32 %idx to i64
  %g = getelementptr i32, i32 addrspace(1)* %values, i64 %idx64
  %v = load i32, i32 addrspace(1)* %g
  store i32 %v, i32 addrspace(3)* %st
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br label %kloop

kloop:
  %k = phi i32 [ 2, %copy ], [ %k.next, %jdone ]
  %kc = icmp ule i32 %k, %bd
  br i1 %kc, label %kbody, label %done

kbody:
  %j0 = lshr i32 %k, 1
  br label %jloop

jloop:
  %j = phi i32 [ %j0, %kbody ], [ %j.next, %G ]
  %jc = icmp ugt i32 %j, 0
  br i1 %jc, label %jbody, label %jdone

jbody:
  %ixj = xor i32 %tid, %j
  %up = icmp ugt i32 %ixj, %tid
  br i1 %up, label %B, label %G

B:
  %tk = and i32 %tid, %k
  %asc = icmp eq i32 %tk, 0
  %sx = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @shared, i32 0, i32 %ixj
  br i1 %asc, label %C, label %D

C:
  %c33 = load i32, i32 addrspace(3)* %sx
  %c34 = load i32, i32 addrspace(3)* %st
  %c35 = icmp slt i32 %c33, %c34
  br i1 %c35, label %E, label %G

E:
  store i32 %c33, i32 addrspace(3)* %st
  store i32 %c34, i32 addrspace(3)* %sx
  br label %G

D:
  %d36 = load i32, i32 addrspace(3)* %sx
  %d37 = load i32, i32 addrspace(3)* %st
  %d38 = icmp sgt i32 %d36, %d37
  br i1 %d38, label %F, label %G

F:
  store i32 %d36, i32 addrspace(3)* %st
  store i32 %d37, i32 addrspace(3)* %sx
  br label %G

G:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %j.next = lshr i32 %j, 1
  br label %jloop

jdone:
  %k.next = shl i32 %k, 1
  br label %kloop

done:
  %r = load i32, i32 addrspace(3)* %st
  store i32 %r, i32 addrspace(1)* %g
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %bk.next = add i32 %bk, %gd
  br label %bucket

exit:
  ret void
}
