; SB1 of the DARM paper (tests/corpus/darm_sb1.wir) as LLVM IR, for comparing with
; LLVM 14's own flattening: `opt-14 -O3 -S darm_sb1.ll`. The same control flow and
; instructions as the warplift kernel (block and grid sizes are arguments); barriers are
; HIP's __syncthreads(): a workgroup fence, s_barrier, a fence.
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

@s = internal addrspace(3) global [1024 x i32] undef, align 4

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier() #0

attributes #0 = { convergent nounwind }

define amdgpu_kernel void @darm_sb1(i32 addrspace(1)* %a, i32 addrspace(1)* %b, i32 addrspace(1)* %p, i32 addrspace(1)* %q, i32 %n, i32 %iters, i32 %bd, i32 %gd) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %tiles = udiv i32 %n, %bd
  %sa = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @s, i32 0, i32 %tid
  %tb = add i32 %tid, 256
  %sb = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @s, i32 0, i32 %tb
  %tp = add i32 %tid, 512
  %sp = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @s, i32 0, i32 %tp
  %tq = add i32 %tid, 768
  %sq = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @s, i32 0, i32 %tq
  %par = and i32 %tid, 1
  %even = icmp eq i32 %par, 0
  br label %outer

outer:
  %tile = phi i32 [ %bid, %entry ], [ %tile.next, %writeback ]
  %more = icmp ult i32 %tile, %tiles
  br i1 %more, label %copy, label %exit

copy:
  %e = mul i32 %tile, %bd
  %idx = add i32 %e, %tid
  %idx64 = zext i32 %idx to i64
  %ga = getelementptr i32, i32 addrspace(1)* %a, i64 %idx64
  %gb = getelementptr i32, i32 addrspace(1)* %b, i64 %idx64
  %gp = getelementptr i32, i32 addrspace(1)* %p, i64 %idx64
  %gq = getelementptr i32, i32 addrspace(1)* %q, i64 %idx64
  %va = load i32, i32 addrspace(1)* %ga
  store i32 %va, i32 addrspace(3)* %sa
  %vb = load i32, i32 addrspace(1)* %gb
  store i32 %vb, i32 addrspace(3)* %sb
  %vp = load i32, i32 addrspace(1)* %gp
  store i32 %vp, i32 addrspace(3)* %sp
  %vq = load i32, i32 addrspace(1)* %gq
  store i32 %vq, i32 addrspace(3)* %sq
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br label %inner

inner:
  %it = phi i32 [ 0, %copy ], [ %it.next, %join ]
  %goon = icmp ult i32 %it, %iters
  br i1 %goon, label %A1, label %writeback

A1:
  br i1 %even, label %A2, label %A3

A2:
  %x2 = load i32, i32 addrspace(3)* %sa
  %y2 = load i32, i32 addrspace(3)* %sb
  %t1_2 = mul i32 %x2, 3
  %t2_2 = add i32 %t1_2, %y2
  %t3_2 = xor i32 %t2_2, %it
  %t4_2 = ashr i32 %t3_2, 1
  %t5_2 = add i32 %t4_2, 7
  %u1_2 = sub i32 %y2, %x2
  %u2_2 = add i32 %u1_2, %t5_2
  store i32 %t5_2, i32 addrspace(3)* %sa
  store i32 %u2_2, i32 addrspace(3)* %sb
  br label %join

A3:
  %x3 = load i32, i32 addrspace(3)* %sp
  %y3 = load i32, i32 addrspace(3)* %sq
  %t1_3 = mul i32 %x3, 3
  %t2_3 = add i32 %t1_3, %y3
  %t3_3 = xor i32 %t2_3, %it
  %t4_3 = ashr i32 %t3_3, 1
  %t5_3 = add i32 %t4_3, 7
  %u1_3 = sub i32 %y3, %x3
  %u2_3 = add i32 %u1_3, %t5_3
  store i32 %t5_3, i32 addrspace(3)* %sp
  store i32 %u2_3, i32 addrspace(3)* %sq
  br label %join

join:
  %it.next = add i32 %it, 1
  br label %inner

writeback:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %ra = load i32, i32 addrspace(3)* %sa
  store i32 %ra, i32 addrspace(1)* %ga
  %rb = load i32, i32 addrspace(3)* %sb
  store i32 %rb, i32 addrspace(1)* %gb
  %rp = load i32, i32 addrspace(3)* %sp
  store i32 %rp, i32 addrspace(1)* %gp
  %rq = load i32, i32 addrspace(3)* %sq
  store i32 %rq, i32 addrspace(1)* %gq
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %tile.next = add i32 %tile, %gd
  br label %outer

exit:
  ret void
}
