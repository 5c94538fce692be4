; ModuleID = 'darm_sb2.ll'
source_filename = "darm_sb2.ll"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

@s = internal unnamed_addr addrspace(3) global [1024 x i32] undef, align 4

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #0

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #0

; Function Attrs: convergent mustprogress nounwind willreturn
declare void @llvm.amdgcn.s.barrier() #1

; Function Attrs: nounwind
define amdgpu_kernel void @darm_sb2(i32 addrspace(1)* nocapture %a, i32 addrspace(1)* nocapture %b, i32 addrspace(1)* nocapture %p, i32 addrspace(1)* nocapture %q, i32 %n, i32 %iters, i32 %bd, i32 %gd) local_unnamed_addr #2 {
entry:
  %tid = tail call i32 @llvm.amdgcn.workitem.id.x()
  %bid = tail call i32 @llvm.amdgcn.workgroup.id.x()
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
  %more4 = icmp ult i32 %bid, %tiles
  br i1 %more4, label %copy.lr.ph, label %exit

copy.lr.ph:                                       ; preds = %entry
  %goon1.not = icmp eq i32 %iters, 0
  br label %copy

copy:                                             ; preds = %copy.lr.ph, %writeback
  %tile5 = phi i32 [ %bid, %copy.lr.ph ], [ %tile.next, %writeback ]
  %e = mul i32 %tile5, %bd
  %idx = add i32 %e, %tid
  %idx64 = zext i32 %idx to i64
  %ga = getelementptr i32, i32 addrspace(1)* %a, i64 %idx64
  %gb = getelementptr i32, i32 addrspace(1)* %b, i64 %idx64
  %gp = getelementptr i32, i32 addrspace(1)* %p, i64 %idx64
  %gq = getelementptr i32, i32 addrspace(1)* %q, i64 %idx64
  %va = load i32, i32 addrspace(1)* %ga, align 4
  store i32 %va, i32 addrspace(3)* %sa, align 4
  %vb = load i32, i32 addrspace(1)* %gb, align 4
  store i32 %vb, i32 addrspace(3)* %sb, align 4
  %vp = load i32, i32 addrspace(1)* %gp, align 4
  store i32 %vp, i32 addrspace(3)* %sp, align 4
  %vq = load i32, i32 addrspace(1)* %gq, align 4
  store i32 %vq, i32 addrspace(3)* %sq, align 4
  fence syncscope("workgroup") release
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %goon1.not, label %writeback, label %B1

B1:                                               ; preds = %copy, %join
  %it2 = phi i32 [ %it.next, %join ], [ 0, %copy ]
  br i1 %even, label %B2, label %B3

B2:                                               ; preds = %B1
  %cx2 = load i32, i32 addrspace(3)* %sa, align 4
  %cm2 = and i32 %cx2, 4
  %cc2 = icmp eq i32 %cm2, 0
  br i1 %cc2, label %B2t, label %join

B2t:                                              ; preds = %B2
  %y2 = load i32, i32 addrspace(3)* %sb, align 4
  %t1_2 = mul i32 %cx2, 3
  %t2_2 = add i32 %y2, %t1_2
  %t3_2 = xor i32 %t2_2, %it2
  %t4_2 = ashr i32 %t3_2, 1
  %t5_2 = add nsw i32 %t4_2, 7
  %u1_2 = sub i32 %y2, %cx2
  %u2_2 = add i32 %u1_2, %t5_2
  store i32 %t5_2, i32 addrspace(3)* %sa, align 4
  store i32 %u2_2, i32 addrspace(3)* %sb, align 4
  br label %join

B3:                                               ; preds = %B1
  %cx3 = load i32, i32 addrspace(3)* %sp, align 4
  %cm3 = and i32 %cx3, 4
  %cc3 = icmp eq i32 %cm3, 0
  br i1 %cc3, label %B3t, label %join

B3t:                                              ; preds = %B3
  %y3 = load i32, i32 addrspace(3)* %sq, align 4
  %t1_3 = mul i32 %cx3, 3
  %t2_3 = add i32 %y3, %t1_3
  %t3_3 = xor i32 %t2_3, %it2
  %t4_3 = ashr i32 %t3_3, 1
  %t5_3 = add nsw i32 %t4_3, 7
  %u1_3 = sub i32 %y3, %cx3
  %u2_3 = add i32 %u1_3, %t5_3
  store i32 %t5_3, i32 addrspace(3)* %sp, align 4
  store i32 %u2_3, i32 addrspace(3)* %sq, align 4
  br label %join

join:                                             ; preds = %B3t, %B3, %B2t, %B2
  %it.next = add nuw i32 %it2, 1
  %exitcond.not = icmp eq i32 %it.next, %iters
  br i1 %exitcond.not, label %writeback, label %B1

writeback:                                        ; preds = %join, %copy
  fence syncscope("workgroup") release
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %ra = load i32, i32 addrspace(3)* %sa, align 4
  store i32 %ra, i32 addrspace(1)* %ga, align 4
  %rb = load i32, i32 addrspace(3)* %sb, align 4
  store i32 %rb, i32 addrspace(1)* %gb, align 4
  %rp = load i32, i32 addrspace(3)* %sp, align 4
  store i32 %rp, i32 addrspace(1)* %gp, align 4
  %rq = load i32, i32 addrspace(3)* %sq, align 4
  store i32 %rq, i32 addrspace(1)* %gq, align 4
  fence syncscope("workgroup") release
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %tile.next = add i32 %tile5, %gd
  %more = icmp ult i32 %tile.next, %tiles
  br i1 %more, label %copy, label %exit

exit:                                             ; preds = %writeback, %entry
  ret void
}

attributes #0 = { mustprogress nofree nosync nounwind readnone speculatable willreturn }
attributes #1 = { convergent mustprogress nounwind willreturn }
attributes #2 = { nounwind }
