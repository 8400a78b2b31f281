package rediskeys

import "testing"

func TestSchemeKeys(t *testing.T) {
	s := New("")
	tests := []struct {
		name string
		give string
		want string
	}{
		{"count", s.Count("42"), "likes:{42}:count"},
		{"version", s.Version("42"), "likes:{42}:ver"},
		{"user", s.User("42", "alice"), "likes:{42}:u:alice"},
		{"channel", s.Channel("42"), "likes:{42}:ch"},
		{"created", s.Created(), "likes:created"},
		{"created prefix", New("app:").Created(), "app:created"},
		{"batch", s.Batch("42", "k3x9"), "likes:{42}:b:k3x9"},
		{"prefix", New("app:").Count("a-b"), "app:{a-b}:count"},
		{"likers chunk", s.Likers("42", 7), "likes:{42}:lk:7"},
		{"current likers chunk", s.LikersChunk("42"), "likes:{42}:lkc"},
		{"user likes", s.UserLikes("alice"), "likes:user-likes:alice"},
		{"read barrier", s.ReadBarrier(), "likes:read-barrier"},
		{"post read barrier", s.PostReadBarrier("42"), "likes:{42}:rb"},
		{"rate limit", s.RateLimit("alice"), "likes:rate:alice"},
		{"watching", s.Watching("42", 881250000), "likes:{42}:w:881250000"},
		{"session key", s.SessionKey("1764633600"), "likes:session:key:1764633600"},
		{"session rate", s.SessionRate("2001:db8::/64"), "likes:session:rate:2001:db8::/64"},
		{"session key prefix", New("app:").SessionKey("static"), "app:session:key:static"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.give != tt.want {
				t.Errorf("got %q; want %q", tt.give, tt.want)
			}
		})
	}
}

func TestPostFromChannel(t *testing.T) {
	s := New("")
	tests := []struct {
		give   string
		want   string
		wantOK bool
	}{
		{s.Channel("42"), "42", true},
		{s.Channel("a_b-C"), "a_b-C", true},
		{"likes:{}:ch", "", false},
		{"other:{42}:ch", "", false},
		{"likes:{42}:count", "", false},
	}
	for _, tt := range tests {
		got, ok := s.PostFromChannel(tt.give)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("PostFromChannel(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
	}
}
