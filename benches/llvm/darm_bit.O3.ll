; ModuleID = 'darm_bit.ll'
source_filename = "darm_bit.ll"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

@shared = internal unnamed_addr addrspace(3) global [1024 x i32] undef, align 4

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #0

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #0

; Function Attrs: convergent mustprogress nounwind willreturn
declare void @llvm.amdgcn.s.barrier() #1

; Function Attrs: nounwind
define amdgpu_kernel void @darm_bit(i32 addrspace(1)* nocapture %values, i32 %n, i32 %bd, i32 %gd) local_unnamed_addr #2 {
entry:
  %tid = tail call i32 @llvm.amdgcn.workitem.id.x()
  %bid = tail call i32 @llvm.amdgcn.workgroup.id.x()
  %buckets = udiv i32 %n, %bd
  %st = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @shared, i32 0, i32 %tid
  %more7 = icmp ult i32 %bid, %buckets
  br i1 %more7, label %copy.lr.ph, label %exit

copy.lr.ph:                                       ; preds = %entry
  %kc.not4 = icmp ult i32 %bd, 2
  br label %copy

copy:                                             ; preds = %copy.lr.ph, %done
  %bk8 = phi i32 [ %bid, %copy.lr.ph ], [ %bk.next, %done ]
  %e = mul i32 %bk8, %bd
  %idx = add i32 %e, %tid
  %idx64 = zext i32 %idx to i64
  %g = getelementptr i32, i32 addrspace(1)* %values, i64 %idx64
  %v = load i32, i32 addrspace(1)* %g, align 4
  store i32 %v, i32 addrspace(3)* %st, align 4
  fence syncscope("workgroup") release
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  br i1 %kc.not4, label %done, label %jloop.preheader

jloop.preheader:                                  ; preds = %copy, %jdone
  %k5 = phi i32 [ %k.next, %jdone ], [ 2, %copy ]
  %jc.not2 = icmp eq i32 %k5, 0
  br i1 %jc.not2, label %jdone, label %jbody.lr.ph

jbody.lr.ph:                                      ; preds = %jloop.preheader
  %tk = and i32 %k5, %tid
  %asc = icmp eq i32 %tk, 0
  br label %jbody

jbody:                                            ; preds = %jbody.lr.ph, %G
  %j3.in = phi i32 [ %k5, %jbody.lr.ph ], [ %j3, %G ]
  %j3 = lshr i32 %j3.in, 1
  %ixj = xor i32 %j3, %tid
  %up = icmp ugt i32 %ixj, %tid
  br i1 %up, label %B, label %G

B:                                                ; preds = %jbody
  %sx = getelementptr [1024 x i32], [1024 x i32] addrspace(3)* @shared, i32 0, i32 %ixj
  %c33 = load i32, i32 addrspace(3)* %sx, align 4
  %c34 = load i32, i32 addrspace(3)* %st, align 4
  br i1 %asc, label %C, label %D

C:                                                ; preds = %B
  %c35 = icmp slt i32 %c33, %c34
  br i1 %c35, label %G.sink.split, label %G

D:                                                ; preds = %B
  %d38 = icmp sgt i32 %c33, %c34
  br i1 %d38, label %G.sink.split, label %G

G.sink.split:                                     ; preds = %D, %C
  store i32 %c33, i32 addrspace(3)* %st, align 4
  store i32 %c34, i32 addrspace(3)* %sx, align 4
  br label %G

G:                                                ; preds = %G.sink.split, %D, %C, %jbody
  fence syncscope("workgroup") release
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %jc.not = icmp ult i32 %j3.in, 4
  br i1 %jc.not, label %jdone, label %jbody

jdone:                                            ; preds = %G, %jloop.preheader
  %k.next = shl i32 %k5, 1
  %kc.not = icmp ugt i32 %k.next, %bd
  br i1 %kc.not, label %done, label %jloop.preheader

done:                                             ; preds = %jdone, %copy
  %r = load i32, i32 addrspace(3)* %st, align 4
  store i32 %r, i32 addrspace(1)* %g, align 4
  fence syncscope("workgroup") release
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %bk.next = add i32 %bk8, %gd
  %more = icmp ult i32 %bk.next, %buckets
  br i1 %more, label %copy, label %exit

exit:                                             ; preds = %done, %entry
  ret void
}

attributes #0 = { mustprogress nofree nosync nounwind readnone speculatable willreturn }
attributes #1 = { convergent mustprogress nounwind willreturn }
attributes #2 = { nounwind }
