// The one rule for "has this file changed" (core/file_stamp.h).
#include "core/file_stamp.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

using namespace forge;

TEST(FileStamp, EveryFieldOfTheRuleCounts) {
    struct stat st {};
    st.st_mode = S_IFREG | 0644;
    st.st_dev = 1;
    st.st_ino = 2;
    st.st_size = 3;
    st.st_ctim = {4, 5};
    st.st_mtim = {6, 7};
    const FileStamp s = stamp_of(st);
    EXPECT_EQ(s.text(), "1:2:3:4000000005:6000000007");
    for (auto change :
         {+[](struct stat& x) { x.st_dev = 9; }, +[](struct stat& x) { x.st_ino = 9; },
          +[](struct stat& x) { x.st_size = 9; }, +[](struct stat& x) { x.st_ctim.tv_nsec = 9; },
          +[](struct stat& x) { x.st_mtim.tv_nsec = 9; }}) {
        struct stat other = st;
        change(other);
        EXPECT_NE(stamp_of(other), s);
        EXPECT_NE(stamp_of(other).text(), s.text());
    }
    // An old change is stable (git's racy-clean rule); only regular files get a stamp to keep.
    auto kept = file_stamp(st);
    ASSERT_TRUE(kept);
    EXPECT_TRUE(kept->second);
    st.st_mode = S_IFDIR | 0755;
    EXPECT_FALSE(file_stamp(st));
}
